"""The V2 model repository and statistics extensions through the Flask test client, over the
session's real models (scikit-learn iris, the custom echo predictor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_predict.extension import close_app
from tests import models
from tests.conftest import AppFactory

IRIS_ROW = {"inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 4],
                        "data": [5.1, 3.5, 1.4, 0.2]}]}
FAR_AWAY = {"REMOTE_ADDR": "10.1.2.3"}


@pytest.fixture()
def watched(make_app: AppFactory, model_config: dict[str, Any], tmp_path: Path) -> Any:
    """An app that polls (the repository extension needs the watcher), with its own state
    folder; closed afterwards."""
    apps: list[Flask] = []

    def build(**settings: Any) -> Flask:
        settings.setdefault("poll_seconds", 0.2)
        settings.setdefault("state_dir", str(tmp_path / "state"))
        app = make_app({k: model_config[k] for k in ("iris", "echo")}, **settings)
        apps.append(app)
        return app

    yield build
    for app in apps:
        close_app(app)


def test_v2_lists_the_extensions_it_serves(watched: Any, make_app: AppFactory,
                                           model_config: dict[str, Any]) -> None:
    extensions = watched().test_client().get("/v2").get_json()["extensions"]
    assert {"model_repository", "statistics"} <= set(extensions)
    still = make_app({"echo": model_config["echo"]}, metrics=False)  # no watcher, no metrics
    extensions = still.test_client().get("/v2").get_json()["extensions"]
    assert "model_repository" not in extensions and "statistics" not in extensions
    answer = still.test_client().post("/v2/repository/models/echo/unload")
    assert answer.status_code == 501 and "PREDICT_POLL_SECONDS" in answer.get_json()["error"]
    assert still.test_client().get("/v2/models/stats").status_code == 501


def test_index_load_and_unload(watched: Any) -> None:
    client = watched().test_client()
    ready = [{"name": "iris", "version": "1", "state": "READY", "reason": ""},
             {"name": "echo", "version": "1", "state": "READY", "reason": ""}]
    assert client.post("/v2/repository/index").get_json() == ready
    assert client.post("/v2/repository/index", json={"ready": True}).get_json() == ready

    unload = client.post("/v2/repository/models/iris/unload")
    assert (unload.status_code, unload.data) == (200, b"")
    assert client.post("/v2/repository/index").get_json() == [
        {"name": "iris", "state": "UNAVAILABLE", "reason": "unloaded"}, ready[1]]
    assert client.post("/v2/repository/index", json={"ready": True}).get_json() == ready[1:]
    assert client.post("/v2/models/iris/infer", json=IRIS_ROW).status_code == 404
    assert client.get("/v2/models/iris/ready").status_code == 404
    assert client.get("/v2/health/ready").status_code == 200  # unloaded: not waited for

    load = client.post("/v2/repository/models/iris/load", json={})
    assert (load.status_code, load.data) == (200, b"")
    assert client.post("/v2/repository/index").get_json() == ready
    assert client.post("/v2/models/iris/infer", json=IRIS_ROW).status_code == 200
    # loading a served model again (Triton: reload) answers success
    assert client.post("/v2/repository/models/iris/load").status_code == 200


def test_unloaded_models_stay_unloaded_for_a_new_worker(watched: Any) -> None:
    """The unloaded names live in the shared state folder: an app started later (a
    respawned worker) never serves the model, whether it loads at once or in the
    background."""
    first = watched().test_client()
    assert first.post("/v2/repository/models/echo/unload").status_code == 200
    for background in (False, True):
        later = watched(load_in_background=background)
        if background:
            assert later.extensions["predict"].service.control.watcher.wait_first_load(30)
        assert later.extensions["predict"].service.names() == ["iris"]
    assert first.post("/v2/repository/models/echo/load").status_code == 200


def test_repository_errors(watched: Any) -> None:
    client = watched().test_client()
    for verb in ("load", "unload"):
        answer = client.post(f"/v2/repository/models/nope/{verb}")
        assert answer.status_code == 404
        assert answer.get_json() == {"error": f"failed to {verb} 'nope': no model of that "
                                              "name in the model configuration"}
    # a name is looked up, never made into a path
    assert client.post("/v2/repository/models/..%2F..%2Fetc/load").status_code == 404
    bad = [(b"[1]", "JSON object"), (b'{"ready": "yes"}', "boolean"),
           (b"{", "failed to parse the request JSON buffer: Missing a name for object "
                  "member. at 1"),
           (b"AAAA", "failed to parse the request JSON buffer: Invalid value. at 0")]
    for body, words in bad:  # a malformed body in Triton's words (its tests look for them)
        answer = client.post("/v2/repository/index", data=body)
        assert answer.status_code == 400 and words in answer.get_json()["error"]
    for verb in ("load", "unload"):
        answer = client.post(f"/v2/repository/models/iris/{verb}", data=b"AAAA")
        assert answer.get_json()["error"] == \
            "failed to parse the request JSON buffer: Invalid value. at 0"
    answer = client.post("/v2/repository/models/iris/load",
                         json={"parameters": {"config": "{\"backend\": \"onnx\"}"}})
    assert answer.status_code == 400 and "not supported" in answer.get_json()["error"]
    answer = client.post("/v2/repository/models/iris/unload", json={"parameters": 3})
    assert answer.status_code == 400
    assert client.post("/v2/repository/index").get_json()[0]["state"] == "READY"


def test_load_and_unload_are_admin_routes(watched: Any) -> None:
    client = watched().test_client()
    for verb in ("unload", "load"):
        refused = client.post(f"/v2/repository/models/iris/{verb}", environ_base=FAR_AWAY)
        assert refused.status_code == 403 and "loopback" in refused.get_json()["error"]
    # behind a proxy, even a loopback peer is someone else
    forwarded = client.post("/v2/repository/models/iris/unload",
                            headers={"X-Forwarded-For": "10.1.2.3"})
    assert forwarded.status_code == 403
    assert client.post("/v2/repository/index", environ_base=FAR_AWAY).status_code == 200

    guarded = watched(admin_tokens="admin-token-0123456789", admin_loopback=False).test_client()
    assert guarded.post("/v2/repository/models/iris/unload").status_code == 401
    done = guarded.post("/v2/repository/models/iris/unload", environ_base=FAR_AWAY,
                        headers={"Authorization": "Bearer admin-token-0123456789"})
    assert done.status_code == 200
    assert guarded.post("/v2/repository/models/iris/load",
                        headers={"X-API-Key": "admin-token-0123456789"}).status_code == 200


def test_statistics_count_successes_failures_and_phases(watched: Any) -> None:
    client = watched().test_client()
    for _ in range(3):
        assert client.post("/v2/models/iris/infer", json=IRIS_ROW).status_code == 200
    bad = {"inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 3],
                       "data": [1, 2, 3]}]}
    assert client.post("/v2/models/iris/infer", json=bad).status_code == 400
    assert client.post("/v2/models/nope/infer", json=IRIS_ROW).status_code == 404
    assert client.get("/v2/models/iris").status_code == 200  # metadata: not an inference

    everything = client.get("/v2/models/stats").get_json()["model_stats"]
    assert [(s["name"], s["version"]) for s in everything] == [("echo", "1"), ("iris", "1")]
    stats = client.get("/v2/models/iris/versions/1/stats").get_json()
    assert client.get("/v2/models/iris/stats").get_json() == stats
    [iris] = stats["model_stats"]
    assert iris == everything[1]
    assert set(iris) == {"name", "version", "last_inference", "inference_count",
                         "execution_count", "inference_stats", "batch_stats", "memory_usage"}
    inference = iris["inference_stats"]
    assert set(inference) == {"success", "fail", "queue", "compute_input", "compute_infer",
                              "compute_output"}
    assert (iris["inference_count"], iris["execution_count"]) == (3, 3)
    assert inference["success"]["count"] == 3 and inference["fail"]["count"] == 1
    assert inference["queue"] == {"count": 3, "ns": 0}
    for phase in ("compute_input", "compute_infer", "compute_output"):
        assert inference[phase]["count"] == 3 and inference[phase]["ns"] > 0
    phases = sum(inference[p]["ns"] for p in ("compute_input", "compute_infer",
                                              "compute_output"))
    assert 0 < phases <= inference["success"]["ns"]  # the phases are parts of the requests
    assert inference["fail"]["ns"] > 0
    assert iris["last_inference"] > 1_600_000_000_000  # ms since the epoch
    assert everything[0]["inference_count"] == 0 and everything[0]["last_inference"] == 0


def test_statistics_errors(watched: Any) -> None:
    client = watched().test_client()
    answer = client.get("/v2/models/nope/stats")
    assert answer.status_code == 404
    assert answer.get_json() == {"error": "requested model 'nope' is not available"}
    answer = client.get("/v2/models/iris/versions/7/stats")
    assert answer.status_code == 404
    assert answer.get_json() == {"error": "requested model 'iris' version 7 is not available"}
    assert client.post("/v2/repository/models/iris/unload").status_code == 200
    assert client.get("/v2/models/iris/stats").status_code == 404
    answer = client.post("/v2/models/iris/infer", json=IRIS_ROW)  # as Triton: unknown now
    assert answer.status_code == 404
    assert answer.get_json() == {"error": "Request for unknown model: 'iris' is not found"}
    assert client.post("/v2/repository/models/iris/load").status_code == 200


def test_failed_load_answers_failed_to_load(make_app: AppFactory,
                                            model_config: dict[str, Any],
                                            tmp_path: Path) -> None:
    """A configured model whose version cannot load: the index says it failed, and so does a
    load (400, as Triton answers a failed load); the cause stays in the log."""
    broken = models.make_custom(tmp_path / "broken")
    config = {"echo": model_config["echo"],
              "broken": {"base_path": str(broken), "predictor": "custom",
                         "class": "predictor.NoSuchPredictor"}}
    app = make_app(config, poll_seconds=0.2, load_in_background=True,
                   state_dir=str(tmp_path / "state"))
    try:
        assert app.extensions["predict"].service.control.watcher.wait_first_load(30)
        client = app.test_client()
        [entry] = [e for e in client.post("/v2/repository/index").get_json()
                   if e["name"] == "broken"]
        assert entry["version"] == "1" and entry["state"] == "UNAVAILABLE"
        assert "failed to load" in entry["reason"]
        answer = client.post("/v2/repository/models/broken/load")
        assert answer.status_code == 400
        error = answer.get_json()["error"]
        # the cause (a file path, a framework's backtrace) stays in the log
        assert error == ("failed to load 'broken': version(s) [1] did not load; the server's "
                         "log has the cause")
    finally:
        close_app(app)
