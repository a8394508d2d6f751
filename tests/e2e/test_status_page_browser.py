"""The status page in headless Chromium, served by real gunicorn: it lists the models, its
form gets a prediction in each of the four protocols, and the live figures follow.

Needs Debian's ``chromium`` and ``chromium-driver`` (``make system-deps`` installs them), else
skips saying so; no browser or driver is downloaded. A screenshot is saved in ``test-artifacts/`` (or
``$FLASK_PREDICT_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from tests import programs
from tests.conftest import ARTIFACTS
from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

PATHS = {"aiplatform": "/v1/projects/status-page/models/iris:predict",
         "tfserving": "/v1/models/iris:predict", "kserve_v2": "/v2/models/iris/infer",
         "grps": "/grps/v1/infer/predict"}


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    chromium = programs.need("chromium", "chromium")
    chromedriver = programs.need("chromedriver", "chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    try:
        yield driver
    finally:
        driver.quit()


def text(driver: webdriver.Chrome, selector: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, selector).text)


def test_status_page_lists_models_and_its_form_predicts_in_every_protocol(
        browser: webdriver.Chrome, model_config: dict[str, Any], tmp_path: Path) -> None:
    with GunicornServer(model_config, workers=2, log_path=tmp_path / "log") as server:
        browser.get(server.url + "/")
        assert browser.title == "flask-predict: status"
        rows = browser.find_elements(By.CSS_SELECTOR, "#models tbody tr.version")
        listed = {row.get_attribute("data-model"): row.text for row in rows}
        assert set(listed) == {"iris", "xgb", "echo"}
        assert all("AVAILABLE" in row for row in listed.values())

        wait = WebDriverWait(browser, 30)
        Select(browser.find_element(By.ID, "model")).select_by_value("iris")
        for protocol, path in PATHS.items():
            Select(browser.find_element(By.ID, "protocol")).select_by_value(protocol)
            field = browser.find_element(By.ID, "instances")
            field.clear()
            field.send_keys("[[5.1, 3.5, 1.4, 0.2]]")
            browser.find_element(By.ID, "send").click()
            wait.until(lambda d: text(d, "#request-line") == f"POST {path}"
                       and text(d, "#answer-status").startswith(("2", "4", "5")))
            assert text(browser, "#answer-status") == "200 OK", text(browser, "#answer")
            answer = json.loads(text(browser, "#answer"))
            assert set(answer) & {"predictions", "outputs", "gtensors"}, answer

        # the live figures: four predictions of iris, read back from the metrics
        wait.until(lambda d: text(d, "td.requests[data-model='iris']") == "4")
        wait.until(lambda d: text(d, "td.rate[data-model='iris']") not in ("", "-"))

        # NaN, the README's missing value, is a number here as in the server's JSON: sent
        # as the token (a missing first feature: the XGBoost model answers "approve")
        Select(browser.find_element(By.ID, "model")).select_by_value("xgb")
        Select(browser.find_element(By.ID, "protocol")).select_by_value("tfserving")
        send(browser, "[[NaN, 0.3, 1.2, -0.5]]")
        wait.until(lambda d: text(d, "#request-line") == "POST /v1/models/xgb:predict"
                   and text(d, "#answer-status") == "200 OK")
        assert text(browser, "#request-body") == '{"instances":[[NaN,0.3,1.2,-0.5]]}'
        assert json.loads(text(browser, "#answer"))["predictions"][0] > 0.5

        # a request that is not sent shows no part of the one before
        send(browser, "[[1, 2")
        wait.until(lambda d: text(d, "#answer-status") == "not sent")
        assert "The instances are not JSON" in text(browser, "#answer")
        assert text(browser, "#request-line") == "" and text(browser, "#request-body") == ""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "status-page.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 0
        shutil.copy(shot, tmp_path / shot.name)

    # the server is gone: the request fails to send, and the last answer is not shown
    send(browser, "[[5.1, 3.5, 1.4, 0.2]]")
    WebDriverWait(browser, 30).until(lambda d: text(d, "#answer-status") == "not sent")
    assert text(browser, "#answer").startswith("The request failed")
    assert "predictions" not in text(browser, "#answer")


def send(browser: webdriver.Chrome, instances: str) -> None:
    field = browser.find_element(By.ID, "instances")
    field.clear()
    field.send_keys(instances)
    browser.find_element(By.ID, "send").click()
