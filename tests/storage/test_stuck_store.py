"""A store that accepts connections and never answers, beside one that works, under real
gunicorn: the working store's new versions are served while the other hangs, the log names
the stuck store and how long it has been stuck, once, and says when it answers again; one
that hangs at start fails only its own models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import models
from tests.e2e.server import GunicornServer, request
from tests.storage.conftest import new_bucket
from tests.storage.test_storage_gunicorn import FLOWER, wait_for
from tests.storage_servers import Bucket, Stall, StoreServer

pytestmark = pytest.mark.e2e

POLL = 1.0


def answer(server: GunicornServer, model: str, body: Any) -> tuple[int, Any]:
    status, _, data = request("POST", f"{server.url}/v1/models/{model}:predict", body=body)
    return status, json.loads(data)


def iris_version(server: GunicornServer) -> str | None:
    status, _, data = request("GET", f"{server.url}/v1/models/iris")
    states = json.loads(data)["model_version_status"] if status == 200 else []
    return max((s["version"] for s in states if s["state"] == "AVAILABLE"), default=None)


def two_stores(s3: StoreServer, gcs: StoreServer, tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch
               ) -> tuple[Bucket, Bucket, Stall, dict[str, Any], dict[str, str]]:
    """iris on Cloud Storage, echo on S3 behind a :class:`Stall`; the server's config and
    environment."""
    working = new_bucket(gcs, "gs", monkeypatch, tmp_path)
    hanging = new_bucket(s3, "s3", monkeypatch, tmp_path)
    models.train_iris(tmp_path / "iris")
    working.upload(tmp_path / "iris", "models/iris")
    models.make_custom(tmp_path / "echo")
    hanging.upload(tmp_path / "echo", "models/echo")
    stall = Stall(s3)
    config = {"iris": {"base_path": working.uri("models/iris")},
              "echo": {"base_path": hanging.uri("models/echo"), "predictor": "custom",
                       "class": "predictor.EchoPredictor"}}
    env = {**gcs.env, **s3.env, "AWS_ENDPOINT_URL": stall.url,
           "FLASK_PREDICT_STORAGE_CACHE": str(tmp_path / "cache"),
           "FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    return working, hanging, stall, config, env


def test_a_hung_store_holds_up_only_its_own_models(
        s3: StoreServer, gcs: StoreServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    working, hanging, stall, config, env = two_stores(s3, gcs, tmp_path, monkeypatch)
    echo = hanging.uri("models/echo")
    try:
        with GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log") as server:
            assert iris_version(server) == "1"
            stall.stall()
            wait_for(lambda: bool(stall.held))  # a poll's listing of s3:// hangs now
            models.train_iris(tmp_path / "v2", version=2)
            working.upload(tmp_path / "v2" / "2", "models/iris/2")
            # served while the s3:// listing still hangs (a try lasts 30s, two of them)
            wait_for(lambda: iris_version(server) == "2", timeout=20)
            assert stall.stalled.is_set() and stall.held
            status, body = answer(server, "echo", {"instances": [1.0]})  # its cached version
            assert status == 200 and body["predictions"][0]["scaled"] == 2.0
            wait_for(lambda: f"{echo}: no answer for" in server.log_text())

            stall.release()
            wait_for(lambda: f"{echo}: the sync ended after" in server.log_text())
            log = server.log_text()
    finally:
        stall.close()
    stuck = [line for line in log.splitlines() if f"{echo}: no answer for" in line]
    assert len(stuck) == 1, stuck   # once, by the process that holds the listing
    assert "(listing the prefix)" in stuck[0] and "the other models are polled" in stuck[0]
    assert working.uri("models/iris") not in "\n".join(stuck)


def test_a_store_that_hangs_at_start_fails_only_its_own_models(
        s3: StoreServer, gcs: StoreServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings keep the remote paths as written; the first download is part of the
    model's load, so a store that hangs then is one model that did not load: with
    PREDICT_EXIT_ON_LOAD_ERROR false the others serve, and the polls fetch it later."""
    _, hanging, stall, config, env = two_stores(s3, gcs, tmp_path, monkeypatch)
    stall.stall()  # before the server starts: its first listing of s3:// never answers
    env["FLASK_PREDICT_EXIT_ON_LOAD_ERROR"] = "false"
    echo = hanging.uri("models/echo")
    try:
        with GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log",
                            timeout=300) as server:
            assert iris_version(server) == "1"
            status, body = answer(server, "iris", {"instances": [FLOWER]})
            assert status == 200 and len(body["predictions"]) == 1
            status, body = answer(server, "echo", {"instances": [1.0]})
            assert status == 404 and "error" in body  # no version loaded, as TF Serving
            failed = [line for line in server.log_text().splitlines()
                      if f"model 'echo' failed to load from {echo}" in line]
            assert failed and all("the store is unreachable" in line for line in failed), \
                server.log_text()
            stall.release()  # the store answers again: a poll fetches it, the model serves
            served: list[Any] = []

            def echo_served() -> bool:
                status, body = answer(server, "echo", {"instances": [1.0]})
                served.append(body)
                return status == 200

            wait_for(echo_served, timeout=120)
            assert served[-1]["predictions"][0]["scaled"] == 2.0
    finally:
        stall.close()
