"""extension: FlaskPredict embedded into an existing app."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask, jsonify

from flask_predict import ConfigError, FlaskPredict, Predictor, close_app


class Upper(Predictor):
    """An app-local predictor registered without an entry point."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Upper:
        return cls()

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        return [str(i).upper() for i in instances]


def host_app() -> Flask:
    app = Flask("host")
    app.config["MAX_CONTENT_LENGTH"] = None

    @app.get("/hello")
    def hello() -> Any:
        return jsonify(message="hi")

    @app.errorhandler(404)
    def not_found(error: Exception) -> Any:
        return jsonify(host="missing"), 404

    return app


def test_embedding_keeps_the_host_app_intact(model_config: dict[str, Any]) -> None:
    app = host_app()
    app.config["PREDICT_MODELS"] = model_config
    app.config["PREDICT_URL_PREFIX"] = "/ml"
    FlaskPredict(app)
    client = app.test_client()
    assert client.get("/hello").get_json() == {"message": "hi"}
    assert client.get("/nowhere").get_json() == {"host": "missing"}
    answer = client.post("/ml/v1/projects/p/models/iris:predict",
                         json={"instances": [[5.1, 3.5, 1.4, 0.2]]})
    assert answer.status_code == 200 and answer.get_json() == {"predictions": [0]}
    assert client.post("/v1/projects/p/models/iris:predict", json={"instances": [[1]]}) \
        .get_json() == {"host": "missing"}
    assert app.json.__class__.__module__.startswith("flask")  # the host's JSON provider stays


def test_init_app_later_and_register_predictor(tmp_path: Path) -> None:
    (tmp_path / "shout" / "3").mkdir(parents=True)
    predict = FlaskPredict()
    predict.register_predictor("upper", Upper)
    app = Flask("late")
    app.config["PREDICT_MODELS"] = {"shout": {"base_path": str(tmp_path / "shout"),
                                              "predictor": "upper"}}
    predict.init_app(app)
    answer = app.test_client().post("/v1/projects/p/models/shout:predict",
                                    json={"instances": ["a", "b"]})
    assert answer.get_json() == {"predictions": ["A", "B"]}
    close_app(app)


def test_init_twice_is_refused(model_config: dict[str, Any]) -> None:
    app = Flask("twice")
    app.config["PREDICT_MODELS"] = model_config
    FlaskPredict(app)
    with pytest.raises(RuntimeError, match="already registered"):
        FlaskPredict(app)


def test_missing_plugin_fails_at_boot(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    app = Flask("boot")
    app.config["PREDICT_MODELS"] = {"m": {"base_path": str(tmp_path / "m"),
                                          "predictor": "torchscript"}}
    with pytest.raises(ConfigError, match="no predictor .torchscript.; installed"):
        FlaskPredict(app)


def test_broken_artifact_fails_at_boot(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.joblib").write_bytes(b"not a pickle")
    app = Flask("boot")
    app.config["PREDICT_MODELS"] = {"m": {"base_path": str(tmp_path / "m"),
                                          "predictor": "sklearn"}}
    with pytest.raises(ConfigError, match="model 'm' version 1 failed to load"):
        FlaskPredict(app)


def test_serving_the_rest_when_asked(tmp_path: Path, model_root: Path) -> None:
    """PREDICT_EXIT_ON_LOAD_ERROR false: the models that loaded serve, readiness leaves the
    broken one out, and its status says "failed to load" without the cause."""
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.joblib").write_bytes(b"not a pickle")
    app = Flask("rest")
    app.config["PREDICT_MODELS"] = {"m": {"base_path": str(tmp_path / "m"),
                                          "predictor": "sklearn"},
                                    "iris": {"base_path": str(model_root / "iris")}}
    app.config["PREDICT_EXIT_ON_LOAD_ERROR"] = False
    FlaskPredict(app)
    client = app.test_client()
    assert client.get("/v2/health/ready").status_code == 200
    assert client.get("/v2/models/m/ready").status_code == 400
    status = client.get("/v1/models/m").get_json()["model_version_status"][0]["status"]
    assert status["error_message"] == "failed to load; the server's log has the cause"


def test_no_model_configured_is_not_ready(make_app: Any) -> None:
    client = make_app({}).test_client()
    assert client.get("/v2/health/live").status_code == 200
    answer = client.get("/v2/health/ready")
    assert answer.status_code == 503
    message = answer.get_json()["error"]
    assert message.startswith("no model is configured: serve one with `flask-predict serve "
                              "--model_name NAME --model_base_path DIR`")
    grps = client.get("/grps/v1/health/ready")
    assert grps.status_code == 503 and grps.get_json()["status"]["msg"] == message


def test_unknown_option_fails_at_boot(model_root: Path) -> None:
    app = Flask("boot")
    app.config["PREDICT_MODELS"] = {"iris": {"base_path": str(model_root / "iris"),
                                             "colour": "blue"}}
    with pytest.raises(ConfigError, match="colour"):
        FlaskPredict(app)


def test_only_chosen_protocols_are_registered(model_config: dict[str, Any]) -> None:
    app = Flask("one")
    app.config.update(PREDICT_MODELS=model_config, PREDICT_PROTOCOLS="aiplatform")
    FlaskPredict(app)
    assert {bp for bp in app.blueprints} == {"predict_aiplatform"}


def test_init_app_leaves_the_host_process_alone(model_config: dict[str, Any]) -> None:
    """Embedding changes the app, never the process: no environment variable (threads,
    CUDA_VISIBLE_DEVICES), no frozen heap, no thread-pool limit."""
    import gc

    from threadpoolctl import threadpool_info

    environ = dict(os.environ)
    frozen = gc.get_freeze_count()
    pools = {p["filepath"]: p["num_threads"] for p in threadpool_info()}
    app = Flask("host")
    app.config.update(PREDICT_MODELS=model_config, PREDICT_POLL_SECONDS=0)
    FlaskPredict(app)
    assert dict(os.environ) == environ
    assert gc.get_freeze_count() == frozen
    after = {p["filepath"]: p["num_threads"] for p in threadpool_info()}
    assert {path: after[path] for path in pools} == pools  # pools loaded before: unchanged


def test_process_setup_only_when_asked(model_config: dict[str, Any],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from flask_predict.runtime import resources as runtime

    calls: list[str] = []
    monkeypatch.setattr(runtime, "prepare_process", lambda *a: calls.append("prepare"))
    monkeypatch.setattr(runtime, "settle_process", lambda *a: calls.append("settle"))
    app = Flask("managed")
    app.config.update(PREDICT_MODELS=model_config, PREDICT_POLL_SECONDS=0,
                      PREDICT_MANAGE_PROCESS=True)
    FlaskPredict(app)
    assert calls == ["prepare", "settle"]


def slow_loading_app(root: Path, name: str, **settings: Any) -> tuple[Flask, Any]:
    """An app loading one model in the background whose ``from_path`` waits for the
    returned event (set it to let the load finish)."""
    import threading

    from flask_predict import Predictor

    release = threading.Event()

    class Slow(Predictor):
        @classmethod
        def from_path(cls, model_dir: str, **options: Any) -> Slow:
            assert release.wait(30)
            return cls()

        def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
            return instances

    (root / "slow" / "1").mkdir(parents=True, exist_ok=True)
    predict = FlaskPredict()
    predict.register_predictor("slow", Slow)
    app = Flask(name)
    app.config.update(PREDICT_MODELS={"s": {"base_path": str(root / "slow"),
                                            "predictor": "slow"}},
                      PREDICT_POLL_SECONDS=0, PREDICT_LOAD_IN_BACKGROUND=True,
                      **{f"PREDICT_{k.upper()}": v for k, v in settings.items()})
    predict.init_app(app)
    return app, release


def test_loading_in_the_background_answers_liveness_first(model_root: Path) -> None:
    """The server's mode: routes answer at once, readiness once the models are in."""
    app, release = slow_loading_app(model_root, "background", load_wait_seconds=0)
    client = app.test_client()
    try:
        assert client.get("/v2/health/live").status_code == 200
        assert client.get("/v2/health/ready").status_code == 400
        assert client.get("/v2/models/s/ready").status_code == 400  # known, not ready
        loading = client.post("/v1/models/s:predict", json={"instances": [1]})
        assert loading.status_code in (404, 503) and "error" in loading.get_json()
        deadline = time.monotonic() + 30  # the folder is scanned, then its version loads
        while "model_version_status" not in client.get("/v1/models/s").get_json():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert client.get("/v1/models/s").get_json()["model_version_status"][0]["state"] \
            == "LOADING"
    finally:
        release.set()
    assert app.extensions["predict"].service.control.watcher.wait_first_load(30)
    assert client.get("/v2/health/ready").status_code == 200
    assert client.post("/v1/projects/p/models/s:predict",
                       json={"instances": [1]}).get_json() == {"predictions": [1]}


def test_requests_during_the_first_load_wait_for_it(model_root: Path) -> None:
    """After a restart (kill -HUP, a respawn) a worker serves at once; a prediction that
    arrives before its model is in waits for it instead of failing, probes do not wait."""
    import threading

    app, release = slow_loading_app(model_root, "waiting", load_wait_seconds=30)
    answers: list[Any] = []
    status: list[Any] = []  # a model's status waits too: a new worker never says "not found"
    waiting = [threading.Thread(target=lambda: answers.append(app.test_client().post(
        "/v1/projects/p/models/s:predict", json={"instances": [7]}))),
        threading.Thread(target=lambda: status.append(app.test_client().get("/v1/models/s")))]
    for thread in waiting:
        thread.start()
    try:
        assert app.test_client().get("/v2/health/ready").status_code == 400  # no wait
        assert app.test_client().get("/v2/models/s/ready").status_code == 400  # no wait
        time.sleep(0.2)
        assert answers == [] and status == []  # still waiting for the model
    finally:
        release.set()
    for thread in waiting:
        thread.join(30)
    assert answers[0].status_code == 200 and answers[0].get_json() == {"predictions": [7]}
    assert status[0].status_code == 200, status[0].get_json()
    assert status[0].get_json()["model_version_status"][0]["state"] == "AVAILABLE"


def test_get_state_is_the_current_apps_own(model_config: dict[str, Any]) -> None:
    from flask_predict.web.current import get_state
    from flask_predict.core.state import EXTENSION_KEY

    first, second = host_app(), host_app()
    for app in (first, second):
        app.config["PREDICT_MODELS"] = model_config
        app.config["PREDICT_POLL_SECONDS"] = 0
        FlaskPredict(app)
    with first.app_context():
        assert get_state() is first.extensions[EXTENSION_KEY]
        with second.test_request_context("/"):
            assert get_state() is second.extensions[EXTENSION_KEY]
        assert get_state() is first.extensions[EXTENSION_KEY]
    with pytest.raises(RuntimeError, match="application context"):
        get_state()
    for app in (first, second):
        close_app(app)
