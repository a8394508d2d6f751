"""Saturation signals behind the documented front (nginx from deploy/nginx in front of two
sync workers): the queue wait that nginx's ``X-Request-Start`` lets the app measure rises
under a burst, and every PromQL query of docs/autoscaling.md, evaluated by a real Prometheus
scraping the server, answers one number that says so."""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import kubernetes_validate
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests import models, programs
from tests.e2e.server import ROOT, free_port, load_benchmark, request

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx")]

harness = load_benchmark("harness")
front = load_benchmark("front")

SLEEPY = "/v1/projects/p/models/sleepy:predict"
DOC = ROOT / "docs" / "autoscaling.md"
WORKERS = 2
BURST = 12
SLEEP = 0.5
"""Twelve requests of half a second on two workers: the last ones to start wait at least
2.5 s for a worker, the first ones next to nothing."""


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("saturation")
    models.make_sleepy(root / "sleepy")
    config = {"sleepy": models.sleepy_config(root / "sleepy")}
    server = front.front(config, SLEEPY, root / "run", workers=WORKERS,
                         ready_path="/v2/health/ready", ready_status=200)
    with harness.started(server, log_dir=root) as running:
        yield running.port


def series(port: int) -> dict[str, float]:
    """Every sample of the server's metrics, summed over labels but ``le``."""
    status, _, body = request("GET", f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            key = sample.name + (f"{{le={sample.labels['le']}}}" if "le" in sample.labels
                                 else "")
            found[key] = found.get(key, 0.0) + sample.value
    return found


def burst(port: int) -> None:
    def one(_: int) -> int:
        return request("POST", f"http://127.0.0.1:{port}{SLEEPY}",
                       body={"instances": [{"sleep": SLEEP}]}, timeout=60)[0]

    with ThreadPoolExecutor(BURST) as pool:
        assert list(pool.map(one, range(BURST))) == [200] * BURST


def wait_for(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.2)


def test_queue_wait_rises_under_a_burst(port: int) -> None:
    before = series(port)
    count = "flask_predict_request_queue_seconds_count"
    burst(port)
    # every worker writes its counts each second: within one scrape interval (a request's
    # wait is counted as it starts, its busy time as it ends)
    busy = "flask_predict_worker_busy_seconds_total"
    wait_for(lambda: series(port).get(count, 0) >= before.get(count, 0) + BURST
             and series(port).get(busy, 0) - before.get(busy, 0) >= BURST * SLEEP)
    after = series(port)
    waited = after[count] - before.get(count, 0)
    under_a_second = (after["flask_predict_request_queue_seconds_bucket{le=1.0}"]
                      - before.get("flask_predict_request_queue_seconds_bucket{le=1.0}", 0))
    assert under_a_second < waited, "some requests waited over a second for a worker"
    assert after["flask_predict_request_queue_seconds_sum"] - \
        before.get("flask_predict_request_queue_seconds_sum", 0) > 2.5
    assert after["flask_predict_worker_busy_seconds_total"] - \
        before.get("flask_predict_worker_busy_seconds_total", 0) >= BURST * SLEEP
    assert after["flask_predict_workers"] == WORKERS


def documented_queries() -> list[str]:
    """The PromQL of docs/autoscaling.md: its ``promql`` blocks, the KEDA triggers' queries
    and the Prometheus adapter's rules."""
    text = DOC.read_text()
    queries = re.findall(r"```promql\n(.*?)\n```", text, re.S)
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        document = yaml.safe_load(block)
        for trigger in document.get("spec", {}).get("triggers", []):
            queries.append(trigger["metadata"]["query"])
        for rule in document.get("externalRules", []):
            queries.append(rule["metricsQuery"])
    return queries


def test_documented_hpa_is_valid() -> None:
    text = DOC.read_text()
    (hpa,) = [doc for doc in map(yaml.safe_load, re.findall(r"```yaml\n(.*?)```", text, re.S))
              if doc.get("kind") == "HorizontalPodAutoscaler"]
    kubernetes_validate.validate(hpa, kubernetes_validate.latest_version(), strict=True)


@pytest.fixture(scope="module")
def prometheus(port: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = programs.need("prometheus", "prometheus")
    root = tmp_path_factory.mktemp("prometheus")
    (root / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "flask-predict",
                            "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}]}))
    web = free_port()
    process = subprocess.Popen(
        [binary, f"--config.file={root / 'prometheus.yml'}",
         f"--storage.tsdb.path={root / 'data'}", f"--web.listen-address=127.0.0.1:{web}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{web}"
    try:
        wait_for(lambda: request("GET", url + "/-/ready")[0] == 200)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def query(url: str, promql: str) -> list[dict[str, Any]]:
    status, _, body = request("GET", f"{url}/api/v1/query?"
                              + urllib.parse.urlencode({"query": promql}))
    answer = json.loads(body)
    assert status == 200 and answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def scraped_up(url: str) -> bool:
    return any(float(s["value"][1]) == 1 for s in query(url, 'up{job="flask-predict"}'))


def test_documented_queries_answer_on_a_real_prometheus(port: int, prometheus: str) -> None:
    queries = documented_queries()
    assert len(queries) == 8  # four blocks, two KEDA triggers, two adapter rules
    wait_for(lambda: scraped_up(prometheus))
    burst(port)
    queue = queries[0]
    # the scrapes after the burst: the average wait answers a positive number
    wait_for(lambda: [float(s["value"][1]) for s in query(prometheus, queue)][:1] > [0.0])
    for promql in queries:
        (sample,) = query(prometheus, promql)
        assert math.isfinite(float(sample["value"][1])), promql
    busy = [q for q in queries if "busy" in q][0]
    (sample,) = query(prometheus, busy)
    assert 0 < float(sample["value"][1]) <= 1
