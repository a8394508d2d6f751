"""Remote model paths under real gunicorn: a versioned s3:// prefix served by three workers
and the master with one download per version, a version uploaded under load, a restart on
a warm cache, the store stopped mid-serve; AIP_STORAGE_URI on Cloud Storage; bad credentials
at boot."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests import models
from tests.e2e.server import GunicornServer, request, worker_pids
from tests.storage.conftest import new_bucket
from tests.storage_servers import S3_ENV, StoreServer, gcs_server, s3_server
from tests.traffic import Traffic

pytestmark = pytest.mark.e2e

POLL = 0.5
FLOWER = [5.1, 3.5, 1.4, 0.2]
V2_BODY = {"inputs": [{"name": "inputs", "datatype": "FP64", "shape": [1, 4], "data": FLOWER}]}


def iris_version(server: GunicornServer) -> tuple[int, Any]:
    status, _, data = request("POST", server.url + "/v2/models/iris/infer", body=V2_BODY)
    return status, json.loads(data).get("model_version") if status == 200 else data


def wait_for(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.1)


def downloads(log: str) -> list[str]:
    return [line for line in log.splitlines() if "downloaded (" in line]


def test_s3_models_once_per_machine_through_uploads_restarts_and_outages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = s3_server(tmp_path / "s3").start()  # its own: this test stops it
    try:
        bucket = new_bucket(store, "s3", monkeypatch, tmp_path)
        models.train_iris(tmp_path / "local" / "iris")
        models.make_custom(tmp_path / "local" / "echo")
        bucket.upload(tmp_path / "local", "models")
        config = {"iris": {"base_path": bucket.uri("models/iris")},
                  "echo": {"base_path": bucket.uri("models/echo"), "predictor": "custom",
                           "class": "predictor.EchoPredictor"}}
        env = {**store.env, "FLASK_PREDICT_STORAGE_CACHE": str(tmp_path / "cache"),
               "FLASK_PREDICT_POLL_SECONDS": str(POLL)}

        first_log = tmp_path / "first.log"
        with GunicornServer(config, workers=3, env=env, log_path=first_log) as server:
            assert len(worker_pids(server, want=3)) == 3
            assert iris_version(server) == (200, "1")
            # the master (iris is shared) and three workers: one download of each version
            assert len(downloads(server.log_text())) == 2, server.log_text()

            # a new version, uploaded object by object while requests keep coming
            models.train_iris(tmp_path / "v2", version=2)
            with Traffic(lambda: iris_version(server)) as traffic:
                bucket.upload(tmp_path / "v2" / "2", "models/iris/2")
                wait_for(lambda: all(iris_version(server) == (200, "2") for _ in range(10)))
            assert traffic.failed == []
            assert {answer for _, answer in traffic.answers} == {"1", "2"}
            assert len(downloads(server.log_text())) == 3

        # a restart finds both models' versions in the cache: nothing is fetched again
        second_log = tmp_path / "second.log"
        with GunicornServer(config, workers=2, env=env, log_path=second_log) as server:
            assert iris_version(server) == (200, "2")
            assert downloads(server.log_text()) == []

            # the store goes away: no request fails, readiness stays, a line per try
            store.stop()
            with Traffic(lambda: iris_version(server)) as traffic:
                time.sleep(6 * POLL)
            assert traffic.failed == [] and traffic.answers
            assert request("GET", server.url + "/v2/health/ready")[0] == 200
            log = server.log_text()
        # three processes poll every half second for three seconds; the tries of each
        # model's store, shared by the machine, back off (1s, then 2s): three at most
        for uri in (bucket.uri("models/iris"), bucket.uri("models/echo")):
            tries = [line for line in log.splitlines()
                     if f"{uri}: cannot list: the store is unreachable" in line]
            assert 1 <= len(tries) <= 3, tries
        for text in (first_log.read_text(), log):
            assert S3_ENV["AWS_SECRET_ACCESS_KEY"] not in text
            assert S3_ENV["AWS_ACCESS_KEY_ID"] not in text
    finally:
        store.stop()


def test_aip_storage_uri_on_cloud_storage(gcs: StoreServer, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Vertex AI's environment as it starts a custom container: the artifacts themselves
    (model.joblib, no version folder) under a gs:// prefix."""
    bucket = new_bucket(gcs, "gs", monkeypatch, tmp_path)
    models.train_iris(tmp_path / "iris")
    bucket.upload(tmp_path / "iris" / "1", "vertex/model")
    route = "/v1/endpoints/123/deployedModels/456"
    env = {**gcs.env, "AIP_STORAGE_URI": bucket.uri("vertex/model"), "AIP_HEALTH_ROUTE": route,
           "AIP_PREDICT_ROUTE": route + ":predict",
           "FLASK_PREDICT_STORAGE_CACHE": str(tmp_path / "cache")}
    with GunicornServer(None, workers=2, env=env, ready_path=route,
                        log_path=tmp_path / "log") as server:
        status, _, data = request("POST", server.url + route + ":predict",
                                  body={"instances": [FLOWER]})
        assert status == 200 and len(json.loads(data)["predictions"]) == 1
        assert len(downloads(server.log_text())) == 1


def test_bad_credentials_stop_the_server_at_boot_with_one_line(tmp_path: Path) -> None:
    store = s3_server(tmp_path / "s3", check_credentials=True).start()
    try:
        env = {**store.env, "FLASK_PREDICT_STORAGE_CACHE": str(tmp_path / "cache")}
        server = GunicornServer({"iris": {"base_path": "s3://models/iris"}}, workers=2,
                                env=env, log_path=tmp_path / "log")
        with pytest.raises(RuntimeError, match="gunicorn exited"):
            server.start()
        server.stop()
    finally:
        store.stop()
    log = server.log_text()
    lines = [line for line in log.splitlines() if "s3://models/iris" in line]
    assert lines and all("access denied (InvalidAccessKeyId)" in line for line in lines), log
    assert S3_ENV["AWS_SECRET_ACCESS_KEY"] not in log
    assert S3_ENV["AWS_ACCESS_KEY_ID"] not in log
