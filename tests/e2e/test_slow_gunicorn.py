"""Long model loads and long predictions under real gunicorn (2 sync workers, a short worker
timeout): no worker is killed, a prediction past its model's limit answers 504 and the
worker serves the next request."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.server import GunicornServer, request
from tests.models import make_sleepy, sleepy_config

pytestmark = pytest.mark.e2e

WORKER_TIMEOUT = 4
"""gunicorn's ``timeout`` in these tests (``GUNICORN_TIMEOUT``)."""


def predict(server: GunicornServer, model: str, instance: object) -> tuple[int, object]:
    status, _, body = request("POST", f"{server.url}/v1/projects/p/models/{model}:predict",
                              {"instances": [instance]}, timeout=60)
    return status, json.loads(body) if body else None


def log(server: GunicornServer) -> str:
    assert server.log_path is not None
    return server.log_path.read_text(errors="replace")


def boots(server: GunicornServer) -> int:
    return log(server).count("Booting worker with pid")


def served_by(server: GunicornServer, model: str) -> set[int]:
    """The pids of the workers answering a burst of requests."""
    pids = set()
    for _ in range(8):
        status, body = predict(server, model, {})
        assert status == 200, body
        assert isinstance(body, dict)
        pids.add(body["predictions"][0])
    return pids


@pytest.fixture()
def slow_load(tmp_path: Path) -> dict[str, object]:
    """A model whose ``from_path`` takes 1.5 times the worker timeout."""
    return {"slow": sleepy_config(make_sleepy(tmp_path / "slow", WORKER_TIMEOUT * 1.5))}


def test_a_load_longer_than_the_worker_timeout_kills_no_worker(
        slow_load: dict[str, object], tmp_path: Path) -> None:
    """The worker loads in the background and keeps beating (and gunicorn >= 22 would not time
    a worker before its first heartbeat anyway): the server becomes ready once."""
    env = {"GUNICORN_TIMEOUT": str(WORKER_TIMEOUT)}
    with GunicornServer(slow_load, workers=2, env=env, log_path=tmp_path / "log") as server:
        time.sleep(WORKER_TIMEOUT * 1.5)  # long enough for the master to kill a silent worker
        pids = served_by(server, "slow")
        assert boots(server) == 2, log(server)
        assert "WORKER TIMEOUT" not in log(server)
        assert len(pids) <= 2


def test_liveness_answers_while_loading_and_readiness_when_loaded(
        slow_load: dict[str, object], tmp_path: Path) -> None:
    env = {"GUNICORN_TIMEOUT": str(WORKER_TIMEOUT)}
    with GunicornServer(slow_load, workers=2, env=env, log_path=tmp_path / "log",
                        ready_path="/v2/health/live") as server:
        status, _, _ = request("GET", server.url + "/v2/health/ready", timeout=5)
        assert status not in (0, 200), "not answered, or ready before the model loaded"
        server.ready_path = "/v2/health/ready"
        server.wait_ready()
        assert boots(server) == 2, log(server)
        assert "WORKER TIMEOUT" not in log(server)


def test_a_prediction_past_its_limit_answers_504_and_the_worker_lives(tmp_path: Path) -> None:
    """One model has its own limit (1 s); the other gets the default gunicorn.conf.py derives
    from the worker timeout (80% of it). Neither request gets its worker killed."""
    base = make_sleepy(tmp_path / "sleepy")
    config = {"limited": sleepy_config(base, timeout_seconds=1), "default": sleepy_config(base)}
    env = {"GUNICORN_TIMEOUT": str(WORKER_TIMEOUT)}
    with GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log") as server:
        before = served_by(server, "limited")
        for model in ("limited", "default"):
            for instance in ({"sleep": WORKER_TIMEOUT * 5}, {"spin": WORKER_TIMEOUT * 5}):
                status, body = predict(server, model, instance)
                assert status == 504, body
                assert isinstance(body, dict) and "time limit" in body["error"]
                status, _ = predict(server, model, {})
                assert status == 200
        assert served_by(server, "limited") <= before | served_by(server, "default")
        assert boots(server) == 2, log(server)
        assert "WORKER TIMEOUT" not in log(server)
        # each timeout is one line saying where the predictor stopped, not a traceback
        text = log(server)
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if "did not answer within" in line]
    assert len(lines) == 4, text
    for line in lines:
        assert "[ERROR] POST /v1/projects/p/models/" in line, line
        assert f"(stopped at {base / '1' / 'predictor.py'}:" in line, line
        assert line.endswith(" in predict)"), line


def test_a_models_zero_limit_is_no_limit_under_the_servers(tmp_path: Path) -> None:
    """``timeout_seconds: 0`` is documented as no limit: the server's limit (here 1 s, where
    gunicorn.conf.py would derive 80% of the worker timeout) does not apply to that model."""
    base = make_sleepy(tmp_path / "sleepy")
    config = {"unlimited": sleepy_config(base, timeout_seconds=0),
              "default": sleepy_config(base)}
    env = {"GUNICORN_TIMEOUT": "60", "FLASK_PREDICT_TIMEOUT_SECONDS": "1"}
    with GunicornServer(config, workers=1, env=env, log_path=tmp_path / "log") as server:
        status, body = predict(server, "unlimited", {"sleep": 2})
        assert status == 200, body
        status, body = predict(server, "default", {"sleep": 2})
        assert status == 504, body
