"""Adding a protocol is one descriptor: registering the tests' ``tally`` protocol (a package
with its ``PROTOCOL``) and nothing else gives it its settings, routes, verbs, request scope
(metrics and access line), OpenAPI part, status page entry and gRPC service, because every
list of protocols reads the registry."""

from __future__ import annotations

import json
import logging
from typing import Any, Iterator

import grpc
import pytest
from flask import Flask

from flask_predict import ConfigError, FlaskPredict
from flask_predict.request import protocol_table
from flask_predict.settings.app import read_settings
from flask_predict.settings.environ import config_from_environ
from flask_predict.grpc.messages import message_class
from flask_predict.process.worker_hooks import start_grpc, stop_grpc

health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
health_pb2_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")
reflection_pb2 = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2")
reflection_pb2_grpc = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2_grpc")

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


@pytest.fixture()
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one change that adds the protocol."""
    monkeypatch.setitem(protocol_table.REGISTRY, "tally", "tests.protocols.tally")


def test_unregistered_protocols_and_their_keys_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown protocol 'tally'"):
        read_settings({"PREDICT_PROTOCOLS": ["tally"]})
    with pytest.raises(ConfigError, match="PREDICT_TALLY_LABEL"):
        read_settings({"PREDICT_TALLY_LABEL": "x"})


def test_its_settings_section_is_read_by_it(registered: None) -> None:
    settings = read_settings({"PREDICT_PROTOCOLS": ["tally"], "PREDICT_TALLY_LABEL": "n"})
    assert settings.protocols == ("tally",) and settings.sections["tally"].label == "n"
    assert "tally" in read_settings({}).protocols  # every registered protocol by default
    with pytest.raises(ConfigError, match="PREDICT_TALLY_LABEL must be"):
        read_settings({"PREDICT_TALLY_LABEL": ""})
    assert config_from_environ({"TALLY_LABEL": "t"}) == {"PREDICT_TALLY_LABEL": "t"}


@pytest.fixture()
def app(registered: None, model_config: dict[str, Any]) -> Iterator[Flask]:
    app = Flask("tally_app")
    app.config.update(PREDICT_MODELS={"iris": model_config["iris"]}, PREDICT_POLL_SECONDS=0,
                      PREDICT_PROTOCOLS=["tally", "kserve_v2"], PREDICT_TALLY_LABEL="counted",
                      PREDICT_ACCESS_LOG="json", PREDICT_OPENAPI_ROUTE="/openapi.json",
                      PREDICT_STATUS_PATH="/status", PREDICT_GRPC_PORT=0,
                      PREDICT_GRPC_HOST="127.0.0.1", PREDICT_ADMIN_LOOPBACK=False)
    FlaskPredict(app)
    yield app


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records
            if r.name == "flask_predict.access"]


def test_its_routes_verbs_scope_document_and_status_page(app: Flask,
                                                         caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    client = app.test_client()
    with caplog.at_level(logging.INFO, logger="flask_predict.access"):
        answer = client.post("/tally/v1/iris", json={"instances": ROWS})
        refused = client.post("/tally/v1/iris", json={"instances": "x"})
        unknown = client.get("/tally/v1/iris/nothing")
    assert answer.status_code == 200 and answer.get_json() == {"counted": [0, 2]}
    assert refused.status_code == 400 and "instances" in refused.get_json()["error"]
    assert unknown.status_code == 404
    lines = access_lines(caplog)
    assert [(line["protocol"], line["verb"], line["status"]) for line in lines] == [
        ("tally", "predict", 200), ("tally", "predict", 400), ("tally", "unknown", 404)]
    assert lines[0]["model"] == "iris" and lines[0]["version"] == "1"
    assert answer.headers["X-Request-ID"] == lines[0]["request_id"]
    series = app.extensions["predict"].metrics.exposition()[0].decode()
    assert 'protocol="tally"' in series and 'verb="predict"' in series
    document = client.get("/openapi.json").get_json()
    assert "/tally/v1/{model}" in document["paths"]
    assert {"name": "Tally", "description": "A protocol made for the tests."} in document["tags"]
    page = client.get("/status/").get_data(as_text=True)
    assert '<option value="tally">tally</option>' in page
    assert '"tally": {"body": {"instances": "$rows"}, "path": "/tally/v1/{model}"}' in page


def test_its_grpc_service_scope_and_admin_rule(app: Flask,
                                               caplog: pytest.LogCaptureFixture) -> None:
    server = start_grpc(app)
    assert server is not None and "tally.Tally" in server.services
    request_class = message_class("tally.TallyRequest")
    reply_class = message_class("tally.TallyReply")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            def call(rpc: str) -> Any:
                return channel.unary_unary(
                    f"/tally.Tally/{rpc}", request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=reply_class.FromString)(
                    request_class(model="iris", instances_json=json.dumps(ROWS)), timeout=10,
                    metadata=(("x-request-id", "tally-call-1"),))

            with caplog.at_level(logging.INFO, logger="flask_predict.access"):
                assert json.loads(call("Predict").predictions_json) == [0, 2]
            with pytest.raises(grpc.RpcError) as refused:
                call("Drain")  # admin: loopback is not enough here
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="tally.Tally"), timeout=10)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            listed = next(reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10))
            assert "tally.Tally" in {s.name for s in listed.list_services_response.service}
    finally:
        stop_grpc(app, grace=0)
    (line,) = access_lines(caplog)
    assert (line["protocol"], line["verb"], line["status"], line["model"]) == (
        "tally_grpc", "predict", 200, "iris")
    assert (line["method"], line["path"], line["request_id"]) == (
        "POST", "/tally.Tally/Predict", "tally-call-1")
