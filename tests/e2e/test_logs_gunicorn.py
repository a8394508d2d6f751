"""The server's log under real gunicorn with 2 sync workers: the line at start saying what
serves where, every line JSON in the JSON format (gunicorn's own, the master's and the
workers', load lines, error lines with their traceback, access lines) with the request id
on the lines a request wrote, and health probes left out of the access log unless asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import GunicornServer, request

pytestmark = pytest.mark.e2e

ROW = [5.1, 3.5, 1.4, 0.2]
PROBES = ("/v2/health/live", "/v2/health/ready", "/v2/models/iris/ready",
          "/grps/v1/health/live", "/grps/v1/health/ready")


def exercise(server: GunicornServer) -> None:
    """Predictions on both workers, a failing one, probes."""
    for number in range(6):
        status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                                  body={"instances": [ROW]},
                                  headers={"X-Request-ID": f"ok-{number}"})
        assert status == 200, body
    status, _, body = request("POST", server.url + "/v1/projects/p/models/echo:predict",
                              body={"instances": [1], "fail": True},
                              headers={"X-Request-ID": "failing-request"})
    assert status == 500, body
    for path in PROBES:
        assert request("GET", server.url + path)[0] == 200, path


def test_every_line_is_json_with_two_workers(model_config: dict[str, Any],
                                             tmp_path: Path) -> None:
    config = {name: model_config[name] for name in ("iris", "echo")}
    server = GrpcGunicornServer(config, workers=2, log_path=tmp_path / "log",
                                env={"FLASK_PREDICT_LOG_FORMAT": "json"})
    with server:
        exercise(server)
    lines = server.log_text().splitlines()
    assert lines
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}")
    messages = [entry.get("message", "") for entry in parsed]
    # gunicorn's own lines, from the master and from each worker
    assert any(m.startswith("Starting gunicorn") for m in messages)
    assert sum(m.startswith("Booting worker with pid") for m in messages) == 2
    assert any(m.startswith("Shutting down: Master") for m in messages)
    loaded = {entry["pid"] for entry in parsed
              if entry.get("message", "").startswith("model 'iris': version 1 loaded")}
    shared = {entry["pid"] for entry in parsed if entry.get("message", "").startswith(
        "model 'iris': version 1 shared from the master")}
    assert len(loaded) == 1 and len(shared) == 2  # the master's load line, each worker's
    # the line at start: what serves where
    [where] = [m for m in messages if m.startswith("flask_predict: serving [")]
    assert where == (f"flask_predict: serving ['iris', 'echo'] with 2 worker(s): REST "
                     f"{server.url} (aiplatform, grps, kserve_v2, mlflow, tfserving), gRPC "
                     f"127.0.0.1:{server.grpc_port}, status page {server.url}/, metrics "
                     f"{server.url}/metrics, OpenAPI {server.url}/openapi.json")
    # the failing request: its error line carries its id and its traceback, in one line
    [error] = [entry for entry in parsed if entry.get("level") == "ERROR"]
    assert error["request_id"] == "failing-request"
    assert "model 'echo' failed to predict" in error["message"]
    assert "RuntimeError: asked to fail" in error["exception"]
    # access lines: the predictions, not the probes
    access = [entry for entry in parsed if "status" in entry and "path" in entry]
    assert sorted(entry["request_id"] for entry in access) == sorted(
        [f"ok-{n}" for n in range(6)] + ["failing-request"])
    assert not [entry for entry in access if entry["path"] in PROBES]


def test_probes_are_access_logged_when_asked(model_config: dict[str, Any],
                                             tmp_path: Path) -> None:
    config = {name: model_config[name] for name in ("iris", "echo")}
    env = {"FLASK_PREDICT_ACCESS_LOG_PROBES": "true"}
    with GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log") as server:
        exercise(server)
    log = server.log_text()
    for path in PROBES:
        assert "verb=health model=" in log and f"path={path} " in log, path
    assert "flask_predict: serving ['iris', 'echo'] with 2 worker(s): REST " in log
