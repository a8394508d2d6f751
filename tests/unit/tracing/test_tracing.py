"""Tracing (flask_predict.tracing): when it is on, the provider the OTEL_* variables build,
and the spans of REST and gRPC requests: the caller's trace continued, one server span with
the conventions' attributes, decode/predict/encode and the waits inside it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from typing import Any, Iterator

import numpy as np
import pytest
from flask import Flask
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from flask_predict.errors import ConfigError
from flask_predict.tracing import provider, spans, switch, tracing_value, wanted
from tests.unit.grpc.test_auth import serving

ROW = [5.1, 3.5, 1.4, 0.2]
TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
V2_BODY = {"inputs": [{"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}


# --- on or off --------------------------------------------------------------------------------

@pytest.mark.parametrize("environ, on", [
    ({}, False),
    ({"OTEL_TRACES_EXPORTER": "none"}, False),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "console, otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
])
def test_the_environment_turns_tracing_on(environ: dict[str, str], on: bool) -> None:
    assert wanted(None, environ) is on


def test_the_setting_wins_over_the_environment() -> None:
    assert wanted(False, {"OTEL_TRACES_EXPORTER": "otlp"}) is False
    assert wanted(True, {}) is True
    assert wanted(TracerProvider(), {}) is True


@pytest.mark.parametrize("value, read", [(None, None), ("true", True), ("0", False),
                                         (False, False)])
def test_tracing_setting_values(value: Any, read: Any) -> None:
    assert tracing_value(value) is read


def test_a_tracing_setting_that_is_nothing_known_is_refused() -> None:
    with pytest.raises(ConfigError, match="PREDICT_TRACING"):
        tracing_value("sometimes")


def test_tracing_on_without_the_sdk_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                     make_app: Any,
                                                     model_config: dict[str, Any]) -> None:
    real = switch.importlib.util.find_spec
    monkeypatch.setattr(switch.importlib.util, "find_spec",
                        lambda name: None if name == "opentelemetry.sdk" else real(name))
    with pytest.raises(ConfigError, match=r"flask-predict\[otel\]"):
        make_app({"iris": model_config["iris"]}, tracing=True)


def test_with_tracing_off_no_opentelemetry_is_imported(model_config: dict[str, Any]) -> None:
    code = (
        "import json, sys\n"
        "from flask import Flask\n"
        "from flask_predict import FlaskPredict\n"
        "app = Flask('off')\n"
        f"app.config.update(PREDICT_MODELS={json.dumps({'iris': model_config['iris']})},\n"
        "                  PREDICT_POLL_SECONDS=0, PREDICT_PAYLOAD_LOG='stdout')\n"
        "FlaskPredict(app)\n"
        "body = {'instances': [[5.1, 3.5, 1.4, 0.2]]}\n"
        "assert app.test_client().post('/v1/models/iris:predict', json=body).status_code == 200\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "OTEL_TRACES_EXPORTER": "none",
                               # the plugins of this tree, where a run puts them first
                               "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


# --- the provider from the environment ------------------------------------------------------

def test_otlp_is_http_unless_the_protocol_says_grpc() -> None:
    assert provider.exporter_names({"OTEL_TRACES_EXPORTER": "otlp"}) == ["otlp_proto_http"]
    assert provider.exporter_names({"OTEL_TRACES_EXPORTER": "otlp,console",
                                    "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) == \
        ["otlp_proto_grpc", "console"]
    assert provider.exporter_names({"OTEL_TRACES_EXPORTER": "otlp",
                                    "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}) \
        == ["otlp_proto_http"]
    assert provider.exporter_names({}) == ["otlp_proto_http"]  # PREDICT_TRACING=true alone
    with pytest.raises(ConfigError, match="http/json"):
        provider.exporter_names({"OTEL_TRACES_EXPORTER": "otlp",
                                 "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


def test_an_exporter_that_is_not_installed_names_what_is() -> None:
    with pytest.raises(ConfigError, match="no span exporter 'zipkin_json'.*'console'"):
        provider.exporter_class("zipkin_json")
    assert provider.exporter_class("console").__name__ == "ConsoleSpanExporter"


def test_the_provider_reads_service_name_and_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    built = provider.from_environment("flask-predict")
    try:
        assert built.resource.attributes["service.name"] == "flask-predict"
        assert "0.25" in built.sampler.get_description()
    finally:
        built.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "iris-server")
    built = provider.from_environment("flask-predict")
    try:
        assert built.resource.attributes["service.name"] == "iris-server"
    finally:
        built.shutdown()


# --- spans of requests ------------------------------------------------------------------------

@pytest.fixture()
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture()
def traced(model_config: dict[str, Any], exporter: InMemorySpanExporter
           ) -> Iterator[tuple[Flask, int]]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield from serving({"iris": model_config["iris"]}, tracing=tracer_provider,
                       access_log="text")


def by_name(found: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in found}


def check_tree(found: tuple[ReadableSpan, ...], server_name: str) -> ReadableSpan:
    """One server span continuing the caller's trace, decode/predict/encode inside it."""
    named = by_name(found)
    server = named[server_name]
    assert server.kind == SpanKind.SERVER
    assert format(server.context.trace_id, "032x") == TRACE
    assert server.parent is not None and format(server.parent.span_id, "016x") == PARENT
    assert server.parent.is_remote
    assert server.attributes["flask_predict.model.name"] == "iris"
    assert server.attributes["flask_predict.model.version"] == "1"
    assert server.attributes["flask_predict.verb"] == "predict"
    phases = [named[name] for name in ("decode", "predict", "encode")]
    for child in phases:
        assert child.parent is not None and child.parent.span_id == server.context.span_id
        assert child.context.trace_id == server.context.trace_id
        assert server.start_time <= child.start_time <= child.end_time <= server.end_time
    assert phases[0].end_time <= phases[1].start_time <= phases[1].end_time \
        <= phases[2].start_time
    return server


def test_a_rest_request_continues_the_callers_trace(
        traced: tuple[Flask, int], exporter: InMemorySpanExporter,
        caplog: pytest.LogCaptureFixture) -> None:
    app, _ = traced
    with caplog.at_level(logging.INFO, logger="flask_predict.access"):
        answer = app.test_client().post("/v2/models/iris/infer?debug=secret", json=V2_BODY,
                                        headers={"traceparent": TRACEPARENT,
                                                 "User-Agent": "curl/8"})
    assert answer.status_code == 200
    server = check_tree(exporter.get_finished_spans(), "POST /v2/models/<model>/infer")
    attributes = dict(server.attributes)
    assert {key: attributes[key] for key in (
        "http.request.method", "http.route", "url.path", "url.scheme",
        "http.response.status_code", "user_agent.original", "flask_predict.protocol")} == {
        "http.request.method": "POST", "http.route": "/v2/models/<model>/infer",
        "url.path": "/v2/models/iris/infer", "url.scheme": "http",
        "http.response.status_code": 200, "user_agent.original": "curl/8",
        "flask_predict.protocol": "kserve_v2"}
    assert attributes["http.response.body.size"] == len(answer.data)
    assert attributes["flask_predict.request_id"] == answer.headers["X-Request-ID"]
    assert "secret" not in json.dumps(attributes)  # no query string
    assert server.status.status_code == StatusCode.UNSET
    line = next(r.getMessage() for r in caplog.records if r.name == "flask_predict.access")
    assert line.startswith(f"request_id={answer.headers['X-Request-ID']} trace_id={TRACE} ")


def test_a_request_without_a_caller_starts_a_trace(traced: tuple[Flask, int],
                                                   exporter: InMemorySpanExporter) -> None:
    app, _ = traced
    assert app.test_client().post("/v1/models/iris:predict",
                                  json={"instances": [ROW]}).status_code == 200
    server = by_name(exporter.get_finished_spans())["POST /v1/models/<model>:predict"]
    assert server.parent is None and server.context.trace_id != int(TRACE, 16)


def test_an_unsampled_caller_records_no_span_but_logs_its_trace(
        traced: tuple[Flask, int], exporter: InMemorySpanExporter,
        caplog: pytest.LogCaptureFixture) -> None:
    app, _ = traced
    with caplog.at_level(logging.INFO, logger="flask_predict.access"):
        answer = app.test_client().post("/v1/models/iris:predict", json={"instances": [ROW]},
                                        headers={"traceparent": f"00-{TRACE}-{PARENT}-00"})
    assert answer.status_code == 200
    assert exporter.get_finished_spans() == ()
    line = next(r.getMessage() for r in caplog.records if r.name == "flask_predict.access")
    assert f" trace_id={TRACE} " in line


def test_a_server_error_marks_the_span_and_a_client_error_does_not(
        traced: tuple[Flask, int], exporter: InMemorySpanExporter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    app, _ = traced
    client = app.test_client()
    assert client.post("/v1/models/iris:predict", json={"instances": [[1, 2]]},
                       headers={"traceparent": TRACEPARENT}).status_code == 400
    (bad,) = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert bad.status.status_code == StatusCode.UNSET
    exporter.clear()
    loaded = app.extensions["predict"].service.use("iris")
    monkeypatch.setattr(loaded.predictor, "predict_tensors",
                        lambda *args: (_ for _ in ()).throw(RuntimeError("broken")))
    loaded.release()
    assert client.post("/v1/models/iris:predict", json={"instances": [ROW]},
                       headers={"traceparent": TRACEPARENT}).status_code == 500
    (failed,) = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "500"


def test_a_grpc_call_continues_the_callers_trace(traced: tuple[Flask, int],
                                                 exporter: InMemorySpanExporter) -> None:
    grpcclient = pytest.importorskip("tritonclient.grpc")
    _, port = traced
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        tensor = grpcclient.InferInput("inputs", [1, 4], "FP64")
        tensor.set_data_from_numpy(np.array([ROW]))
        client.infer("iris", [tensor], headers={"traceparent": TRACEPARENT})
        with pytest.raises(Exception):
            client.infer("nope", [tensor], headers={"traceparent": TRACEPARENT})
    finally:
        client.close()
    found = exporter.get_finished_spans()
    servers = [s for s in found if s.kind == SpanKind.SERVER]
    assert len(servers) == 2
    ok = check_tree(tuple(s for s in found if s.end_time <= servers[0].end_time),
                    "inference.GRPCInferenceService/ModelInfer")
    assert {key: ok.attributes[key] for key in ("rpc.system", "rpc.service", "rpc.method",
                                                "rpc.grpc.status_code")} == {
        "rpc.system": "grpc", "rpc.service": "inference.GRPCInferenceService",
        "rpc.method": "ModelInfer", "rpc.grpc.status_code": 0}
    assert ok.attributes["flask_predict.protocol"] == "kserve_v2_grpc"
    missing = servers[1]
    assert missing.attributes["rpc.grpc.status_code"] == 5  # NOT_FOUND: the client's
    assert missing.status.status_code == StatusCode.UNSET


# --- the waits --------------------------------------------------------------------------------

class _BusyOnce:
    """A version's call lock that another thread holds at the first try."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tries = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.tries += 1
        if not blocking and self.tries == 1:
            return False
        return self.lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.lock.release()


def test_waits_become_spans_inside_decode_and_predict(traced: tuple[Flask, int],
                                                     exporter: InMemorySpanExporter,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    app, _ = traced
    state = app.extensions["predict"]
    service = state.service
    # the models' first load not done yet (a background load), the version asked for not
    # loaded at the request's arrival: the request waits for the load
    monkeypatch.setattr(service.repository, "first_sync", threading.Event())
    monkeypatch.setattr(service, "load_wait_seconds", 0.001)
    monkeypatch.setattr(service, "_serves", lambda *args: False)
    record = state.scopes.open("kserve_v2", "predict", None, 0)
    with service.use("iris") as loaded:
        busy = _BusyOnce()
        monkeypatch.setattr(loaded, "calls", busy)
        service.call(loaded, "predict", lambda: None, ())
    state.scopes.close(record, 200, 0)
    assert busy.tries == 2  # the first try found the version busy
    assert record.waits is not None and [w[0] for w in record.waits] == ["load", "busy"]
    # that request had no transport, so no span: end one for it as the scope would
    tracing = state.scopes.tracing
    server = tracing.tracer.start_span("server", kind=SpanKind.SERVER)
    record.trace = (server, spans.context.attach(spans.trace.set_span_in_context(server)), 0,
                    None, _NoTransport())
    tracing.end(record, 200, 0, record.predict_ended + 0.001)
    named = by_name(exporter.get_finished_spans())
    assert named["wait for model load"].parent.span_id == named["decode"].context.span_id
    assert named["wait for busy version"].parent.span_id == named["predict"].context.span_id
    assert named["decode"].parent.span_id == server.get_span_context().span_id


class _NoTransport:
    def span_end(self, carrier: Any, status: int, size: int | None
                 ) -> tuple[dict[str, Any], str | None]:
        return {}, None


def test_a_span_the_host_app_started_is_the_parent(traced: tuple[Flask, int],
                                                   exporter: InMemorySpanExporter) -> None:
    from opentelemetry import context, trace

    app, _ = traced
    host = app.extensions["predict"].scopes.tracing.provider.get_tracer("host")
    outer = host.start_span("host app's request span", kind=SpanKind.SERVER)
    token = context.attach(trace.set_span_in_context(outer))
    try:
        assert app.test_client().post("/v1/models/iris:predict", json={"instances": [ROW]},
                                      headers={"traceparent": TRACEPARENT}).status_code == 200
    finally:
        context.detach(token)
        outer.end()
    ours = by_name(exporter.get_finished_spans())["POST /v1/models/<model>:predict"]
    assert ours.parent is not None and ours.parent.span_id == outer.get_span_context().span_id
