"""The start of a real gunicorn server with 2 sync workers: a model that cannot load (every
kind of unreadable file alike) stops it with one line (unless PREDICT_EXIT_ON_LOAD_ERROR
serves the rest), no client ever reads a load's cause (a file path, XGBoost's native
backtrace), and a server with no model is not ready on any protocol, saying how to
configure one and logging nothing per probe."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from tests import models
from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import GunicornServer, request

pytestmark = pytest.mark.e2e

CORRUPT_JSON = '{"learner": {"broken'


def corrupt_xgboost(base: Path) -> Path:
    """An XGBoost model whose model.json is cut short: XGBoost's load raises with a native
    backtrace (``Stack trace: [bt] (0) /.../libxgboost.so ...``) in its message."""
    (base / "1").mkdir(parents=True)
    (base / "1" / "model.json").write_text(CORRUPT_JSON)
    return base


def run_until_exit(server: GunicornServer, timeout: float = 120) -> int:
    """Start *server* expecting it to stop by itself; its exit status."""
    server._log = open(server.log_path, "wb") if server.log_path else subprocess.DEVNULL
    server.process = subprocess.Popen(server.command(), cwd=server.cwd, env=server.env,
                                      stdout=server._log, stderr=subprocess.STDOUT)
    try:
        return server.process.wait(timeout=timeout)
    finally:
        server.stop()


@pytest.mark.parametrize("shared", [True, False], ids=["in-the-master", "in-each-worker"])
def test_unreadable_models_at_start_stop_the_server_with_one_line(tmp_path: Path,
                                                                  shared: bool) -> None:
    """Every kind of unreadable model file (a corrupt, cut or empty pickle or joblib file,
    XGBoost JSON or UBJSON that is not, an empty one) stops the server the same way: one
    line naming each model, its file and why it is unreadable, and gunicorn's "failed to
    boot" status. The models load in the master (shared by the workers) and it stops before
    any worker starts; or, not shared, in each worker, and the first worker to find them
    stops the server."""
    unreadable = models.make_unreadable(tmp_path / "models")
    config = {"iris": {"base_path": str(models.train_iris(tmp_path / "iris"))},
              **{name: {"base_path": str(tmp_path / "models" / name)} for name in unreadable}}
    env = {} if shared else {"FLASK_PREDICT_SHARED_MODELS": "false"}
    server = GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log")
    status = run_until_exit(server)
    log = server.log_text()
    assert status == 3, log  # gunicorn's "Worker failed to boot": the master halts
    lines = [line for line in log.splitlines() if "failed to load" in line]
    assert len(lines) == 1, log  # one line for the server, not one per worker
    assert "flask_predict: not starting: model " in lines[0]
    for name, (path, why) in unreadable.items():
        said = f"model {name!r} version 1 failed to load from {path}: {models.UNREADABLE}"
        assert said in lines[0], (name, lines[0])
        assert why in lines[0].split(said, 1)[1].split("; model ")[0], (name, lines[0])
    assert lines[0].endswith("(PREDICT_EXIT_ON_LOAD_ERROR=false serves the models that "
                             "loaded)")
    assert "Stack trace" not in log and "[bt]" not in log and "Traceback" not in log, log
    assert ".cc:" not in log, "XGBoost's source file is its business"
    assert ("Booting worker" in log) is not shared, "a shared model fails before any worker"
    if not shared:
        assert "Reason: Worker failed to boot." in log


def test_serving_the_rest_and_no_client_reads_the_cause(tmp_path: Path) -> None:
    """With PREDICT_EXIT_ON_LOAD_ERROR false the server starts with the models that loaded
    and is ready; every answer about the broken one says "failed to load", and none holds
    the file, the framework's message or its native backtrace."""
    config = {"iris": {"base_path": str(models.train_iris(tmp_path / "iris"))},
              "loans": {"base_path": str(corrupt_xgboost(tmp_path / "loans"))}}
    env = {"FLASK_PREDICT_EXIT_ON_LOAD_ERROR": "false"}
    with GunicornServer(config, workers=2, env=env, log_path=tmp_path / "log") as server:
        status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                                  body={"instances": [[5.1, 3.5, 1.4, 0.2]]})
        assert status == 200, body
        answers = {path: request("GET", server.url + path)
                   for path in ("/v1/models/loans", "/v1/models/loans/versions/1",
                                "/v2/models/loans", "/v2/models/loans/ready",
                                "/grps/v1/health/ready", "/", "/status.json")}
        answers["index"] = request("POST", server.url + "/v2/repository/index")
        answers["load"] = request("POST", server.url + "/v2/repository/models/loans/load")
        answers["grps"] = request("POST", server.url + "/grps/v1/metadata/model",
                                  body={"str_data": "loans"})
        log = server.log_text()
    for path, (status, _, body) in answers.items():
        text = body.decode()
        assert status, path
        for secret in (str(tmp_path), "model.json", "XGBoostError", "Stack trace", "[bt]",
                       "libxgboost"):
            assert secret not in text, (path, text)
    statuses = json.loads(answers["/v1/models/loans"][2])["model_version_status"]
    assert statuses == [{"version": "1", "state": "END", "status": {
        "error_code": "UNKNOWN", "error_message": "failed to load; the server's log has the "
                                                  "cause"}}]
    [entry] = [e for e in json.loads(answers["index"][2]) if e["name"] == "loans"]
    assert entry["reason"] == "failed to load; the server's log has the cause"
    assert answers["load"][0] == 400
    assert "failed to load" in answers["/"][2].decode()
    # the log has it: the file and the cause, in the master that loads the shared model and
    # once in each worker, the server going on
    lines = [line for line in log.splitlines() if "failed to load from" in line]
    said = f"{tmp_path / 'loans' / '1' / 'model.json'}: {models.UNREADABLE}not an XGBoost model"
    assert len(lines) == 3 and all(said in line and "serving the other models" in line
                                   for line in lines), log


def test_no_model_configured_is_not_ready_on_any_protocol(tmp_path: Path) -> None:
    server = GrpcGunicornServer(None, workers=2, log_path=tmp_path / "log",
                                env={"AIP_HEALTH_ROUTE": "/health"})
    server.ready_path = "/v2/health/live"
    with server:
        status, _, body = request("GET", server.url + "/v2/health/ready")
        assert status == 503
        message = json.loads(body)["error"]
        for flag in ("flask-predict serve --model_name NAME --model_base_path DIR",
                     "--model_config_file FILE"):
            assert flag in message
        status, _, body = request("GET", server.url + "/grps/v1/health/ready")
        assert status == 503 and json.loads(body)["status"]["msg"] == message
        status, _, body = request("GET", server.url + "/health")  # Vertex AI's probe
        assert status == 503 and json.loads(body)["error"] == message
        with server.channel() as channel:
            with pytest.raises(grpc.RpcError) as caught:
                service_pb2_grpc.GRPCInferenceServiceStub(channel).ServerReady(
                    service_pb2.ServerReadyRequest(), timeout=30)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert caught.value.details() == message
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=30)
            assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING
        log = server.log_text()
    assert f"flask_predict: {message}" in log  # the master says it at start too
    # a probe's answer is its only trace: no ERROR line, no traceback, per probe
    said = [line for line in log.splitlines() if message in line]
    assert said == [line for line in said if f"flask_predict: {message}" in line], log
    assert "Traceback" not in log and "[ERROR]" not in log, log

