"""SageMaker's multi-model contract over the lazy tier, through the Flask test client:
``POST /models`` (409, 507), ``GET /models`` with its pages, ``GET`` and ``DELETE
/models/<name>``, ``/models/<name>/invoke`` and the target-model header on ``/invocations``,
each error in MLflow's format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_predict.extension import close_app
from flask_predict.protocols.mlflow import multi_model
from tests.conftest import AppFactory
from tests.lazy_models import linear_answer, train_linear

ROW = [1.0, 2.0, 3.0]
BODY = {"instances": [ROW]}
FAR_AWAY = {"REMOTE_ADDR": "10.1.2.3"}


@pytest.fixture()
def multi(make_app: AppFactory, tmp_path: Path) -> Any:
    """An app with SageMaker's multi-model API on, over a root SageMaker downloads into
    (``<root>/<hash>/model``); closed after."""
    root = tmp_path / "models"
    for seed in (1, 2, 3):
        train_linear(root / f"hash{seed}" / "model", seed)
    apps: list[Flask] = []

    def build(**settings: Any) -> tuple[Flask, Path]:
        settings.setdefault("lazy_root", str(root))
        settings.setdefault("mlflow_multi_model", True)
        app = make_app({}, **settings)
        apps.append(app)
        return app, root

    yield build
    for app in apps:
        close_app(app)


def error(answer: Any, status: int, code: str, words: str) -> None:
    assert answer.status_code == status, answer.get_json()
    body = answer.get_json()
    assert set(body) == {"error_code", "message"}
    assert body["error_code"] == code and words in body["message"], body


def test_load_list_describe_invoke_and_unload(multi: Any) -> None:
    app, root = multi()
    client = app.test_client()
    url = str(root / "hash2" / "model")
    loaded = client.post("/models", json={"model_name": "customer-2", "url": url})
    assert loaded.status_code == 200
    assert loaded.get_json() == {"modelName": "customer-2", "modelUrl": url}
    assert client.get("/models").get_json() == {"models": [{"modelName": "customer-2",
                                                            "modelUrl": url}]}
    assert client.get("/models/customer-2").get_json()["modelUrl"] == url
    invoked = client.post("/models/customer-2/invoke", json=BODY)
    assert invoked.status_code == 200
    assert invoked.get_json() == {"predictions": [linear_answer(2, ROW)]}
    by_header = client.post("/invocations", json=BODY,
                            headers={"X-Amzn-SageMaker-Target-Model": "customer-2"})
    assert by_header.get_json() == {"predictions": [linear_answer(2, ROW)]}
    assert client.delete("/models/customer-2").status_code == 200
    error(client.get("/models/customer-2"), 404, "RESOURCE_DOES_NOT_EXIST", "not loaded")
    error(client.post("/models/customer-2/invoke", json=BODY), 404,
          "RESOURCE_DOES_NOT_EXIST", "not loaded")
    assert client.get("/models").get_json() == {"models": []}
    again = client.post("/models", json={"model_name": "customer-2", "url": url})
    assert again.status_code == 200  # loaded again after its unload


def test_the_target_model_header_loads_a_folder_of_the_root(multi: Any) -> None:
    app, root = multi()
    train_linear(root / "store-7", 7)
    answer = app.test_client().post("/invocations", json=BODY,
                                    headers={"X-Amzn-SageMaker-Target-Model": "store-7"})
    assert answer.get_json() == {"predictions": [linear_answer(7, ROW)]}
    error(app.test_client().post("/invocations", json=BODY,
                                 headers={"X-Amzn-SageMaker-Target-Model": "store-8"}),
          404, "RESOURCE_DOES_NOT_EXIST", "store-8")


def test_loaded_twice_is_409_and_past_the_cap_507(multi: Any) -> None:
    app, root = multi()
    client = app.test_client()
    url = str(root / "hash1" / "model")
    assert client.post("/models", json={"model_name": "one", "url": url}).status_code == 200
    error(client.post("/models", json={"model_name": "one", "url": url}), 409,
          "RESOURCE_ALREADY_EXISTS", "already loaded")
    small, root = multi(lazy_max_bytes=100)
    refused = small.test_client().post("/models", json={"model_name": "big", "url": url})
    error(refused, 507, "RESOURCE_EXHAUSTED", "PREDICT_LAZY_MAX_BYTES")
    assert small.test_client().get("/models").get_json() == {"models": []}


@pytest.mark.parametrize("url", ["/etc", "{root}/..", "{root}/../elsewhere", "{root}",
                                 "{root}/.hidden", "relative/../../x", "", 5])
def test_a_url_outside_the_root_is_refused(multi: Any, url: Any, tmp_path: Path) -> None:
    app, root = multi()
    (tmp_path / "elsewhere").mkdir()
    url = url.format(root=root) if isinstance(url, str) else url
    answer = app.test_client().post("/models", json={"model_name": "x", "url": url})
    error(answer, 400, "BAD_REQUEST", "url")


def test_bad_bodies_and_unknown_models(multi: Any) -> None:
    app, root = multi()
    client = app.test_client()
    error(client.post("/models", json=[1]), 400, "BAD_REQUEST", "model_name")
    error(client.post("/models", json={"url": str(root / "hash1")}), 400, "BAD_REQUEST",
          "model_name")
    error(client.post("/models", json={"model_name": "..", "url": str(root / "hash1")}),
          400, "BAD_REQUEST", "model_name")
    error(client.post("/models", json={"model_name": "n", "url": str(root / "nothing")}),
          404, "RESOURCE_DOES_NOT_EXIST", "")
    error(client.delete("/models/never"), 404, "RESOURCE_DOES_NOT_EXIST", "not loaded")
    error(client.get("/models?next_page_token=x"), 400, "BAD_REQUEST", "next_page_token")


def test_pages_of_models(multi: Any, tmp_path: Path) -> None:
    app, root = multi()
    client = app.test_client()
    for n in range(multi_model.PAGE + 5):
        assert client.post("/models", json={"model_name": f"m{n:03}",
                                            "url": str(root / "hash1" / "model")}
                           ).status_code == 200
    first = client.get("/models").get_json()
    assert len(first["models"]) == multi_model.PAGE
    second = client.get(f"/models?next_page_token={first['nextPageToken']}").get_json()
    assert [m["modelName"] for m in second["models"]] == [
        f"m{n:03}" for n in range(multi_model.PAGE, multi_model.PAGE + 5)]
    assert "nextPageToken" not in second


def test_off_unless_asked_and_guarded_as_admin_routes(multi: Any) -> None:
    app, root = multi(mlflow_multi_model=False)
    error(app.test_client().get("/models"), 404, "RESOURCE_DOES_NOT_EXIST",
          "SAGEMAKER_MULTI_MODEL")
    guarded, root = multi(admin_tokens="admin-token-0123456789", admin_loopback=False)
    client = guarded.test_client()
    body = {"model_name": "one", "url": str(root / "hash1" / "model")}
    assert client.post("/models", json=body, environ_base=FAR_AWAY).status_code == 401
    assert client.delete("/models/one", environ_base=FAR_AWAY).status_code == 401
    assert client.get("/models", environ_base=FAR_AWAY).status_code == 200
    assert client.post("/models", json=body, environ_base=FAR_AWAY, headers={
        "Authorization": "Bearer admin-token-0123456789"}).status_code == 200
