"""Tracing under real gunicorn with two workers: an OTLP receiver in this test (the
collector's protobuf messages over OTLP/HTTP) receives the spans of REST requests of every
protocol and gRPC calls of every gRPC service, each continuing the caller's trace; the
spans are sent when the workers stop gracefully (the batch delay is longer than the test)."""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

from flask_predict.grpc.messages import POOL, message_class
from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import request

pytestmark = pytest.mark.e2e

ROW = [5.1, 3.5, 1.4, 0.2]
REST = {  # protocol -> (path, body, server span name)
    "aiplatform": ("/v1/projects/p/models/iris:predict", {"instances": [ROW]},
                   "POST /v1/projects/<project>/models/<model>:predict"),
    "tfserving": ("/v1/models/iris:predict", {"instances": [ROW]},
                  "POST /v1/models/<model>:predict"),
    "kserve_v2": ("/v2/models/iris/infer", {"inputs": [
        {"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]},
        "POST /v2/models/<model>/infer"),
    "grps": ("/grps/v1/infer/predict", {"model": "iris", "ndarray": [ROW]},
             "POST /grps/v1/infer/predict"),
}
EACH = 4


def enum_value(message: str, field: str, name: str) -> int:
    enum = POOL.FindMessageTypeByName(message).fields_by_name[field].enum_type
    number: int = enum.values_by_name[name].number
    return number


def grpc_requests() -> dict[str, tuple[str, Any, str]]:
    """service -> (rpc, request message, response class name)."""
    v2 = message_class("inference.ModelInferRequest")(model_name="iris")
    tensor = v2.inputs.add(name="inputs", datatype="FP64", shape=[1, 4])
    tensor.contents.fp64_contents.extend(ROW)
    tf = message_class("tensorflow.serving.PredictRequest")()
    tf.model_spec.name = "iris"
    tf.inputs["inputs"].dtype = enum_value("tensorflow.TensorProto", "dtype", "DT_DOUBLE")
    tf.inputs["inputs"].tensor_shape.dim.add(size=1)
    tf.inputs["inputs"].tensor_shape.dim.add(size=4)
    tf.inputs["inputs"].double_val.extend(ROW)
    grps = message_class("grps.protos.v1.GrpsMessage")(model="iris")
    grps_tensor = grps.gtensors.tensors.add(name="inputs", shape=[1, 4])
    grps_tensor.dtype = enum_value("grps.protos.v1.GenericTensor", "dtype", "DT_FLOAT64")
    grps_tensor.flat_float64.extend(ROW)
    return {"inference.GRPCInferenceService": ("ModelInfer", v2,
                                               "inference.ModelInferResponse"),
            "tensorflow.serving.PredictionService": ("Predict", tf,
                                                     "tensorflow.serving.PredictResponse"),
            "grps.protos.v1.GrpsService": ("Predict", grps, "grps.protos.v1.GrpsMessage")}


class Collector(BaseHTTPRequestHandler):
    """OTLP/HTTP: ``POST /v1/traces`` with an ``ExportTraceServiceRequest``."""

    exports: list[ExportTraceServiceRequest] = []
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802
        data = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.path == "/v1/traces"
        assert self.headers["Content-Type"] == "application/x-protobuf"
        with self.lock:
            self.exports.append(ExportTraceServiceRequest.FromString(data))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def collector() -> Iterator[tuple[int, type[Collector]]]:
    handler = type("Handler", (Collector,), {"exports": [], "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, handler
    server.shutdown()
    server.server_close()


def ids() -> tuple[str, str]:
    return os.urandom(16).hex(), os.urandom(8).hex()


def traced_workers(log: Path, sent: dict[str, Any]) -> set[str]:
    """The pids of the workers whose access lines name one of the *sent* traces."""
    workers = set()
    for line in log.read_text().splitlines():
        found = re.search(r"\] \[(\d+)\] \[INFO\] request_id=\S+ trace_id=([0-9a-f]{32}) ", line)
        if found and found[2] in sent:
            workers.add(found[1])
    return workers


def test_spans_of_every_protocol_reach_the_collector(
        model_config: dict[str, Any], collector: tuple[int, type[Collector]],
        tmp_path: Path) -> None:
    port, handler = collector
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "iris-e2e",
           "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
           "OTEL_BSP_SCHEDULE_DELAY": "600000"}
    sent: dict[str, tuple[str, str, str]] = {}  # trace id -> (parent span id, name, protocol)
    log = tmp_path / "server.log"
    with GrpcGunicornServer({"iris": model_config["iris"]}, workers=2, env=env,
                            log_path=log) as server:
        def rest(protocol: str) -> None:
            path, body, name = REST[protocol]
            trace, parent = ids()
            status, _, data = request("POST", server.url + path, body=body,
                                      headers={"traceparent": f"00-{trace}-{parent}-01"})
            assert status == 200, data
            sent[trace] = (parent, name, protocol)

        def rpc(service: str) -> None:
            method, message, answer = grpc_requests()[service]
            trace, parent = ids()
            with server.channel() as channel:  # a connection of its own: either worker
                call = channel.unary_unary(f"/{service}/{method}",
                                           request_serializer=type(message).SerializeToString,
                                           response_deserializer=message_class(answer).FromString)
                got = call(message, metadata=[("traceparent", f"00-{trace}-{parent}-01")],
                           timeout=30)
            if service.startswith("grps"):  # grps answers a failure in an OK message
                assert got.status.code == 200, got
            sent[trace] = (parent, f"{service}/{method}", service)

        jobs = [(rest, p) for p in REST for _ in range(EACH)] + \
            [(rpc, s) for s in grpc_requests() for _ in range(EACH)]
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda job: job[0](job[1]), jobs))
            for _ in range(20):  # a busy machine may leave one worker all of a round
                if len(traced_workers(log, sent)) == 2:
                    break
                list(pool.map(rest, list(REST) * EACH))
        assert handler.exports == []  # nothing sent yet: the batch waits
    # the server stopped gracefully: each worker flushed its spans as it exited
    spans = {}
    for export in handler.exports:
        for resource_spans in export.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert attributes["service.name"] == "iris-e2e"
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.setdefault(span.trace_id.hex(), []).append(span)
    assert set(spans) == set(sent)
    for trace, (parent, name, _) in sent.items():
        (server_span,) = [s for s in spans[trace] if s.kind == s.SPAN_KIND_SERVER]
        assert server_span.name == name
        assert server_span.parent_span_id.hex() == parent
        children = {s.name: s for s in spans[trace] if s.parent_span_id == server_span.span_id}
        assert set(children) == {"decode", "predict", "encode"}
        for child in children.values():
            assert server_span.start_time_unix_nano <= child.start_time_unix_nano \
                <= child.end_time_unix_nano <= server_span.end_time_unix_nano
        attributes = {a.key: a.value for a in server_span.attributes}
        assert attributes["flask_predict.model.name"].string_value == "iris"
        assert attributes["flask_predict.model.version"].string_value == "1"
        if name.startswith("POST "):
            assert attributes["http.response.status_code"].int_value == 200
        else:
            assert attributes["rpc.system"].string_value == "grpc"
            assert attributes["rpc.grpc.status_code"].int_value == 0
    # the access lines name each trace, from both workers
    assert len(traced_workers(log, sent)) == 2
