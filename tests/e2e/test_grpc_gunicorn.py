"""gRPC under real gunicorn with 2 sync workers, each serving its own models on the one
shared port: the V2 ``GRPCInferenceService`` through ``tritonclient.grpc``, grps's
``GrpsService`` through a client generated from our ``grps.proto``, the standard health
service and reflection; both workers answer, a worker that dies costs only its call in
flight, and a worker that stops lets its calls finish.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import grpc
import numpy as np
import pytest
import requests
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import \
    ProtoReflectionDescriptorDatabase
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from tests.e2e.grpc_support import GrpcGunicornServer, answering_workers, generated_grps, \
    worker_of
from tests.e2e.server import request
from tests.protocols.grps.models import make_grps_models

pytestmark = pytest.mark.e2e

ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3], [7.7, 3.0, 6.1, 2.3]])
LIMIT = 256 * 1024
"""PREDICT_MAX_REQUEST_BYTES of this server: it bounds REST bodies and gRPC messages."""
MAX_INSTANCES = 1000


@pytest.fixture(scope="module")
def server(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GrpcGunicornServer]:
    folder = tmp_path_factory.mktemp("grpc")
    models = {**model_config, **make_grps_models(folder / "models")}
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log",
                            env={"FLASK_PREDICT_MAX_REQUEST_BYTES": str(LIMIT),
                                 "FLASK_PREDICT_MAX_INSTANCES": str(MAX_INSTANCES)}) as running:
        yield running


@pytest.fixture()
def triton(server: GrpcGunicornServer) -> Iterator[Any]:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    yield client
    client.close()


@pytest.fixture()
def v2(server: GrpcGunicornServer) -> Iterator[Any]:
    with server.channel() as chan:
        yield service_pb2_grpc.GRPCInferenceServiceStub(chan)


@pytest.fixture(scope="module")
def grps(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The generated grps modules, as ``grps.pb2`` and ``grps.stub(channel)``."""
    pb2, pb2_grpc = generated_grps(tmp_path_factory.mktemp("grps_client"))

    class Grps:
        pass

    client = Grps()
    client.pb2 = pb2  # type: ignore[attr-defined]
    client.stub = pb2_grpc.GrpsServiceStub  # type: ignore[attr-defined]
    return client


def rest_v2(server: GrpcGunicornServer, model: str, body: Any) -> tuple[int, Any]:
    status, _, answer = request("POST", f"{server.url}/v2/models/{model}/infer", body=body)
    return status, json.loads(answer)


def rest_arrays(body: Any) -> dict[str, np.ndarray]:
    """The outputs of a REST V2 JSON answer as arrays."""
    arrays = {}
    for output in body["outputs"]:
        if output["datatype"] == "BYTES":
            values = [v.encode() for v in output["data"]]
            array = np.array(values, dtype=object)
        else:
            array = np.array(output["data"], dtype=output["datatype"].lower()
                             .replace("fp", "float").replace("bool", "bool_"))
        arrays[output["name"]] = array.reshape(output["shape"])
    return arrays


def typed_request(model: str, name: str, datatype: str, array: np.ndarray,
                  field: str) -> Any:
    req = service_pb2.ModelInferRequest(model_name=model)
    tensor = req.inputs.add(name=name, datatype=datatype, shape=list(array.shape))
    getattr(tensor.contents, field).extend(array.reshape(-1).tolist())
    return req


def raw_input(name: str, datatype: str, array: np.ndarray) -> Any:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


# --- V2 ---------------------------------------------------------------------------------------

def test_v2_health_and_metadata_as_over_rest(server: GrpcGunicornServer, triton: Any) -> None:
    assert triton.is_server_live() and triton.is_server_ready()
    assert triton.is_model_ready("iris") and triton.is_model_ready("xgb", "1")
    with pytest.raises(InferenceServerException) as caught:
        triton.is_model_ready("nope")
    assert caught.value.status() == "StatusCode.NOT_FOUND"
    for model in ("iris", "xgb", "echo"):
        got = triton.get_model_metadata(model, as_json=True)
        _, _, rest = request("GET", f"{server.url}/v2/models/{model}")
        expected = json.loads(rest)
        for tensors in (expected["inputs"], expected["outputs"]):
            for tensor in tensors:  # protobuf's JSON prints int64 as strings
                tensor["shape"] = [str(size) for size in tensor["shape"]]
        assert got == expected
    _, _, rest = request("GET", f"{server.url}/v2")
    assert triton.get_server_metadata(as_json=True) == json.loads(rest)
    with pytest.raises(InferenceServerException) as caught:
        triton.get_model_metadata("nope")
    assert caught.value.status() == "StatusCode.NOT_FOUND"
    assert "not found" in caught.value.message()


def test_v2_infer_raw_and_typed_equal_rest(server: GrpcGunicornServer, triton: Any,
                                          v2: Any) -> None:
    """The same request through REST JSON, gRPC raw contents (tritonclient's default) and
    gRPC typed contents gives the same arrays, for all three kinds of model."""
    cases = [("iris", "inputs", "FP64", ROWS, "fp64_contents"),
             ("xgb", "x", "FP32", np.array([[np.nan, 0.1, 0.2, 0.3], [0, 0.1, 0.2, 0.3]],
                                           dtype=np.float32), "fp32_contents"),
             ("echo", "text", "BYTES", np.array([b"a", b"bc"], dtype=object),
              "bytes_contents")]
    for model, name, datatype, array, field in cases:
        data = ([v.decode() for v in array.reshape(-1)] if datatype == "BYTES"
                else [None if np.isnan(v) else v for v in array.reshape(-1).tolist()])
        status, body = rest_v2(server, model, {"id": "r1", "inputs": [
            {"name": name, "shape": list(array.shape), "datatype": datatype, "data": data}]})
        assert status == 200, body
        expected = rest_arrays(body)
        raw = triton.infer(model, [raw_input(name, datatype, array)], request_id="r1")
        assert raw.get_response().id == "r1"
        assert raw.get_response().model_version == body["model_version"] == "1"
        typed = grpcclient.InferResult(  # answered in raw contents, as Triton answers
            v2.ModelInfer(typed_request(model, name, datatype, array, field)))
        for output in typed.get_response().outputs:
            for got in (raw.as_numpy(output.name), typed.as_numpy(output.name)):
                assert got.dtype == expected[output.name].dtype
                assert got.tolist() == expected[output.name].tolist(), (model, output.name)


DATATYPES = [("BOOL", np.bool_, "bool_contents"), ("UINT8", np.uint8, "uint_contents"),
             ("UINT16", np.uint16, "uint_contents"), ("UINT32", np.uint32, "uint_contents"),
             ("UINT64", np.uint64, "uint64_contents"), ("INT8", np.int8, "int_contents"),
             ("INT16", np.int16, "int_contents"), ("INT32", np.int32, "int_contents"),
             ("INT64", np.int64, "int64_contents"), ("FP16", np.float16, None),
             ("FP32", np.float32, "fp32_contents"), ("FP64", np.float64, "fp64_contents"),
             ("BYTES", np.object_, "bytes_contents")]


@pytest.mark.parametrize("datatype,dtype,field", DATATYPES, ids=[d[0] for d in DATATYPES])
def test_v2_every_datatype_reaches_the_model_as_over_rest(
        server: GrpcGunicornServer, triton: Any, v2: Any, datatype: str, dtype: Any,
        field: str | None) -> None:
    """The echo model reports what it received: every V2 datatype arrives as over REST,
    through raw contents and, where the datatype has one, its typed field."""
    if datatype == "BYTES":
        array = np.array([[b"x", b"yz"]], dtype=object)
        data: Any = ["x", "yz"]
    else:
        array = np.array([[1, 0]] if datatype == "BOOL" else [[3, 1.5 if "FP" in datatype
                                                              else 7]], dtype=dtype)
        data = array.reshape(-1).tolist()
    status, body = rest_v2(server, "echo", {"inputs": [
        {"name": "v", "shape": [1, 2], "datatype": datatype, "data": data}]})
    assert status == 200, body
    expected = rest_arrays(body)["predictions"].tolist()
    raw = triton.infer("echo", [raw_input("v", datatype, array)]).as_numpy("predictions")
    assert raw.tolist() == expected
    if field is not None:
        typed = grpcclient.InferResult(
            v2.ModelInfer(typed_request("echo", "v", datatype, array, field)))
        assert typed.as_numpy("predictions").tolist() == expected
    else:  # FP16 has no typed field: the server says to send raw contents
        with pytest.raises(grpc.RpcError) as caught:
            v2.ModelInfer(typed_request("echo", "v", datatype, array.astype(np.float32),
                                        "fp32_contents"))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "raw_input_contents" in caught.value.details()


def test_v2_classification_and_requested_outputs(server: GrpcGunicornServer, v2: Any) -> None:
    req = typed_request("iris", "inputs", "FP64", ROWS, "fp64_contents")
    requested = req.outputs.add(name="predict_proba")
    requested.parameters["classification"].int64_param = 2
    answer = v2.ModelInfer(req)
    assert [o.name for o in answer.outputs] == ["predict_proba"]
    _, body = rest_v2(server, "iris", {"inputs": [
        {"name": "inputs", "shape": [3, 4], "datatype": "FP64", "data": ROWS.ravel().tolist()}],
        "outputs": [{"name": "predict_proba", "parameters": {"classification": 2}}]})
    classes = grpcclient.InferResult(answer).as_numpy("predict_proba")
    assert [v.decode() for v in classes.reshape(-1)] == body["outputs"][0]["data"]
    assert list(answer.outputs[0].shape) == body["outputs"][0]["shape"] == [3, 2]


@pytest.mark.parametrize("method", [
    "/inference.GRPCInferenceService/ModelInfer", "/inference.GRPCInferenceService/ModelReady",
    "/grps.protos.v1.GrpsService/Predict", "/grps.protos.v1.GrpsService/PredictStreaming"])
def test_bytes_that_are_no_message_are_invalid_argument(server: GrpcGunicornServer,
                                                        method: str) -> None:
    """grpcio alone would answer INTERNAL, a server error, for the client's mistake."""
    with server.channel() as chan:
        call = (chan.unary_stream(method) if method.endswith("Streaming")
                else chan.unary_unary(method))
        for garbage in (b"\x00", b"\xff" * 7):
            with pytest.raises(grpc.RpcError) as error:
                for _ in iter_answers(call(garbage, timeout=30)):
                    pass
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT, garbage
            assert "Error parsing message" in error.value.details()
        # the worker lives on
        chan.unary_unary("/inference.GRPCInferenceService/ServerLive")(b"", timeout=30)


def iter_answers(answer: Any) -> Any:
    """A streaming call's answers, or a unary call's one answer."""
    return answer if isinstance(answer, grpc.Call) and hasattr(answer, "__iter__") else [answer]


def test_v2_errors_are_status_codes_with_the_rest_message(
        server: GrpcGunicornServer, triton: Any, v2: Any) -> None:
    cases = [("nope", "FP64", ROWS, grpc.StatusCode.NOT_FOUND, 404),
             ("iris", "FP64", ROWS[:, :3].copy(), grpc.StatusCode.INVALID_ARGUMENT, 400),
             # past float32's range: refused, not cast to infinity
             ("xgb", "FP64", np.array([[1e300, 0.1, 0.2, 0.3]]),
              grpc.StatusCode.INVALID_ARGUMENT, 400),
             ("mirror", "BYTES", np.array([b"fail"], dtype=object), grpc.StatusCode.INTERNAL,
              500)]
    for model, datatype, array, code, http in cases:
        with pytest.raises(InferenceServerException) as caught:
            triton.infer(model, [raw_input("x", datatype, array)])
        assert caught.value.status() == str(code)
        data = ([v.decode() for v in array.ravel()] if datatype == "BYTES"
                else array.ravel().tolist())
        status, body = rest_v2(server, model, {"inputs": [
            {"name": "x", "shape": list(array.shape), "datatype": datatype, "data": data}]})
        assert status == http
        assert caught.value.message() == body["error"]
    wrong_field = typed_request("iris", "inputs", "FP64", ROWS, "fp32_contents")
    with pytest.raises(grpc.RpcError) as error:
        v2.ModelInfer(wrong_field)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "contents.fp64_contents" in error.value.details()
    unknown = typed_request("iris", "inputs", "FLOAT", ROWS, "fp64_contents")
    with pytest.raises(grpc.RpcError) as error:
        v2.ModelInfer(unknown)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown datatype 'FLOAT'" in error.value.details()


def test_message_size_is_bounded_like_the_rest_body(server: GrpcGunicornServer, v2: Any
                                                    ) -> None:
    big = np.zeros((LIMIT // 32 + 1, 4))  # just over LIMIT bytes of FP64
    req = service_pb2.ModelInferRequest(model_name="iris", raw_input_contents=[big.tobytes()])
    req.inputs.add(name="inputs", datatype="FP64", shape=list(big.shape))
    with pytest.raises(grpc.RpcError) as error:
        v2.ModelInfer(req)
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    status, _, _ = request("POST", f"{server.url}/v2/models/iris/infer",
                           data=b"x" * (big.nbytes + 1))
    assert status == 413


def test_infer_keeps_the_rest_route_s_instance_limit(server: GrpcGunicornServer, v2: Any
                                                     ) -> None:
    rows = np.zeros((MAX_INSTANCES + 1, 4))  # a small message, too many rows
    with pytest.raises(grpc.RpcError) as error:
        v2.ModelInfer(raw_request("iris", rows))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"limit is {MAX_INSTANCES}" in error.value.details()
    status, _ = rest_v2(server, "iris", {"inputs": [
        {"name": "inputs", "datatype": "FP64", "shape": list(rows.shape),
         "data": rows.ravel().tolist()}]})
    assert status == 413
    assert v2.ModelInfer(raw_request("iris", rows[:MAX_INSTANCES])).outputs


def raw_request(model: str, rows: np.ndarray) -> Any:
    req = service_pb2.ModelInferRequest(model_name=model, raw_input_contents=[rows.tobytes()])
    req.inputs.add(name="inputs", datatype="FP64", shape=list(rows.shape))
    return req


# --- grps -------------------------------------------------------------------------------------

def grps_rest(server: GrpcGunicornServer, body: Any = None, data: bytes | None = None,
              query: str = "") -> tuple[int, bytes]:
    """``POST /grps/v1/infer/predict``: *body* as JSON, or *data* as octet-stream."""
    answer = requests.post(f"{server.url}/grps/v1/infer/predict{query}", json=body, data=data,
                           headers={"Content-Type": "application/octet-stream"}
                           if data is not None else None, timeout=30)
    return answer.status_code, answer.content


def test_grps_predict_answers_what_http_answers(server: GrpcGunicornServer, grps: Any) -> None:
    from google.protobuf import json_format

    pb2 = grps.pb2
    iris = pb2.GrpsMessage(model="iris-1")
    tensor = iris.gtensors.tensors.add(name="inputs", dtype=pb2.DT_FLOAT64, shape=[3, 4])
    tensor.flat_float64.extend(ROWS.ravel().tolist())
    gmap = pb2.GrpsMessage(model="mirror")
    gmap.gmap.s_i64["k"] = 9007199254740993
    gmap.gmap.s_b["b"] = b"\x00\xff"
    gmap.gmap.s_f["f"] = 0.1
    too_many = pb2.GrpsMessage(model="iris-1")  # past PREDICT_MAX_INSTANCES: 413 both ways
    tensor = too_many.gtensors.tensors.add(name="inputs", dtype=pb2.DT_FLOAT64,
                                           shape=[MAX_INSTANCES + 1, 4])
    tensor.flat_float64.extend([0.0] * (4 * (MAX_INSTANCES + 1)))
    messages = [iris, too_many, pb2.GrpsMessage(model="echo", str_data="hello"), gmap,
                pb2.GrpsMessage(model="nope-3", str_data="x"),
                pb2.GrpsMessage(model="mirror", str_data="fail"),
                pb2.GrpsMessage(model="mirror")]
    with server.channel() as chan:
        stub = grps.stub(chan)
        for message in messages:
            got = json_format.MessageToDict(stub.Predict(message),
                                            preserving_proto_field_name=True)
            body = json_format.MessageToDict(message, preserving_proto_field_name=True)
            status, answer = grps_rest(server, body)
            expected = json.loads(answer)
            assert got == expected, message
            assert got["status"]["code"] == status
        binary = stub.Predict(pb2.GrpsMessage(model="mirror", bin_data=b"\x00\x01raw"))
        status, answer = grps_rest(server, data=b"\x00\x01raw", query="?model=mirror")
        assert binary.bin_data == answer == b"\x00\x01raw"
        assert binary.status.status == pb2.Status.SUCCESS


def test_grps_predict_streaming(server: GrpcGunicornServer, grps: Any) -> None:
    pb2 = grps.pb2

    def stream(order: dict[str, Any]) -> list[Any]:
        message = pb2.GrpsMessage(model="countdown", str_data=json.dumps(order))
        with server.channel() as chan:
            return list(grps.stub(chan).PredictStreaming(message))

    answers = stream({"count": 3})
    assert [a.str_data for a in answers] == ["chunk-1", "chunk-2", "chunk-3"]
    assert all(a.status.code == 200 for a in answers)
    binary = stream({"count": 2, "binary": True})
    assert [a.bin_data for a in binary] == [b"\x00chunk-1", b"\x00chunk-2"]
    failing = stream({"count": 3, "fail_at": 2})
    assert failing[0].str_data == "chunk-1"
    assert (failing[1].status.code, failing[1].status.status) == (500, pb2.Status.FAILURE)
    assert len(failing) == 2
    with server.channel() as chan:
        (only,) = grps.stub(chan).PredictStreaming(pb2.GrpsMessage(model="nope", str_data="x"))
    assert (only.status.code, only.status.msg) == (404, "Model nope not found.")


def test_grps_online_state_is_shared_with_http_and_every_worker(
        server: GrpcGunicornServer, grps: Any) -> None:
    pb2 = grps.pb2

    def ready_everywhere(want: bool) -> None:
        for _ in range(6):  # fresh connections: both workers answer
            with server.channel() as chan:
                answer = grps.stub(chan).CheckReadiness(pb2.GrpsMessage())
                health = health_pb2_grpc.HealthStub(chan).Check(
                    health_pb2.HealthCheckRequest(service="grps.protos.v1.GrpsService"))
            assert (answer.status.code == 200) is want
            assert (health.status == health_pb2.HealthCheckResponse.SERVING) is want
            status, _, _ = request("GET", f"{server.url}/grps/v1/health/ready")
            assert (status == 200) is want

    try:
        with server.channel() as chan:
            assert grps.stub(chan).Offline(pb2.GrpsMessage()).status.code == 200
        ready_everywhere(False)
        assert request("GET", f"{server.url}/grps/v1/health/online")[0] == 200
        ready_everywhere(True)
        request("GET", f"{server.url}/grps/v1/health/offline")
        with server.channel() as chan:
            assert grps.stub(chan).CheckLiveness(pb2.GrpsMessage()).status.code == 200
            assert grps.stub(chan).Online(pb2.GrpsMessage()).status.code == 200
        ready_everywhere(True)
    finally:
        request("GET", f"{server.url}/grps/v1/health/online")


def test_grps_metadata(server: GrpcGunicornServer, grps: Any) -> None:
    pb2 = grps.pb2
    with server.channel() as chan:
        stub = grps.stub(chan)
        server_text = stub.ServerMetadata(pb2.GrpsMessage()).str_data
        model = stub.ModelMetadata(pb2.GrpsMessage(str_data="iris"))
        missing = stub.ModelMetadata(pb2.GrpsMessage(str_data="nope"))
    _, _, rest = request("GET", f"{server.url}/grps/v1/metadata/server")
    assert server_text == json.loads(rest)["str_data"]
    assert 'name: "iris"' in model.str_data and "DT_FLOAT64" in model.str_data
    assert (missing.status.code, missing.status.status) == (404, pb2.Status.FAILURE)


# --- health, reflection, workers --------------------------------------------------------------

SERVICES = ["grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
            "grps.protos.v1.GrpsService", "inference.GRPCInferenceService",
            "tensorflow.serving.ModelService", "tensorflow.serving.PredictionService"]


def test_health_checks_and_reflection(server: GrpcGunicornServer) -> None:
    with server.channel() as chan:
        health = health_pb2_grpc.HealthStub(chan)
        for name in ["", *SERVICES[2:]]:
            answer = health.Check(health_pb2.HealthCheckRequest(service=name))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, name
        with pytest.raises(grpc.RpcError) as error:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
        database = ProtoReflectionDescriptorDatabase(chan)
        assert sorted(database.get_services()) == SERVICES
        infer = database.FindFileContainingSymbol("inference.ModelInferRequest")
        assert infer.name == "grpc_predict_v2.proto"


def test_both_workers_answer_and_the_master_never_loads_grpc(server: GrpcGunicornServer
                                                             ) -> None:
    pids = answering_workers(server, live_call)
    assert len(pids) == 2
    assert server.process is not None
    master = server.process.pid
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            assert f"PPid:\t{master}" in status.read()
    with open(f"/proc/{master}/maps") as maps:
        assert "cygrpc" not in maps.read()


# --- worker lifecycle (these run last: they kill and stop workers) ----------------------------

def test_a_killed_worker_loses_only_its_call_in_flight(server: GrpcGunicornServer) -> None:
    """Calls go round-robin over four connections (two per worker), one at a time, while
    one worker is SIGKILLed: at most one call per connection to it fails (the one in flight,
    and one sent on its other connection before the client saw that socket close), the next
    calls reconnect to the surviving worker, and the worker gunicorn starts in its place
    serves the shared port again (for new connections).

    The calls use ``wait_for_ready``: a default (fail-fast) call made while its channel
    backs off after a failed reconnection would fail with UNAVAILABLE instead of waiting
    (docs/protocols/grpc.md, "When a worker dies")."""
    channels = connections_to_each_worker(server, per_worker=2)
    stubs = [service_pb2_grpc.GRPCInferenceServiceStub(chan) for chan in channels]
    request_ = service_pb2.ModelInferRequest(model_name="iris", raw_input_contents=[
        ROWS.tobytes()])
    request_.inputs.add(name="inputs", datatype="FP64", shape=[3, 4])
    results: list[tuple[str, int]] = []
    stop = threading.Event()

    def traffic() -> None:
        index = 0
        while not stop.is_set():
            try:
                _, call = stubs[index % 4].ModelInfer.with_call(request_, timeout=30,
                                                                wait_for_ready=True)
                results.append(("ok", worker_of(call)))
            except grpc.RpcError as exc:
                results.append((f"{exc.code()}: {exc.details()}", 0))
            index += 1

    thread = threading.Thread(target=traffic)
    thread.start()
    try:
        while len(results) < 8:
            time.sleep(0.05)
        before = {pid for _, pid in results if pid}
        assert len(before) == 2, results
        victim = max(before)
        os.kill(victim, signal.SIGKILL)
        killed_at = len(results)
        deadline = time.monotonic() + 60
        while len(results) < killed_at + 40 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(60)
        for chan in channels:
            chan.close()
    after = results[killed_at:]
    failed = [code for code, _ in after if code != "ok"]
    assert len(failed) <= 2, failed  # the victim's two connections
    assert len(after) >= 40
    assert victim not in {pid for _, pid in after[2:]}
    # Existing connections stay with the survivor; new ones reach the new worker too.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        answering = answering_workers(server, live_call, timeout=10)
        if len(answering) == 2 and victim not in answering:
            break
    assert len(answering) == 2 and victim not in answering, answering


def connections_to_each_worker(server: GrpcGunicornServer, per_worker: int
                               ) -> list[grpc.Channel]:
    """*per_worker* open channels to each of the 2 workers (the kernel picks the worker
    of each new connection)."""
    by_worker: dict[int, list[grpc.Channel]] = {}
    deadline = time.monotonic() + 90  # the second worker may still be loading its models
    while time.monotonic() < deadline:
        chan = server.channel()
        chosen = by_worker.setdefault(worker_of(live_call(chan)), [])
        if len(chosen) < per_worker:
            chosen.append(chan)
        else:
            chan.close()
        if len(by_worker) == 2 and all(len(c) == per_worker for c in by_worker.values()):
            return [chan for chans in by_worker.values() for chan in chans]
    raise AssertionError(f"connections reached only {sorted(by_worker)}")


def live_call(chan: grpc.Channel) -> Any:
    _, call = service_pb2_grpc.GRPCInferenceServiceStub(chan).ServerLive.with_call(
        service_pb2.ServerLiveRequest(), wait_for_ready=True, timeout=30)
    return call


def test_a_stopping_worker_finishes_its_calls(server: GrpcGunicornServer, grps: Any,
                                              tmp_path: Path) -> None:
    """SIGTERM to the worker holding a stream: gunicorn's graceful stop ends the stream
    normally (within PREDICT_GRPC_GRACE_SECONDS) before the worker exits."""
    pb2 = grps.pb2
    release = tmp_path / "release"
    with server.channel() as chan:
        stub = grps.stub(chan)
        _, call = stub.CheckLiveness.with_call(pb2.GrpsMessage())
        worker = worker_of(call)  # the connection's worker holds the stream too
        order = json.dumps({"count": 3, "wait_for": str(release)})
        stream = stub.PredictStreaming(pb2.GrpsMessage(model="countdown", str_data=order))
        first = next(stream)
        os.kill(worker, signal.SIGTERM)
        time.sleep(0.5)
        release.touch()
        rest = list(stream)
    assert [m.str_data for m in [first, *rest]] == ["chunk-1", "chunk-2", "chunk-3"]
    assert stream.code() == grpc.StatusCode.OK
    with server.channel() as chan:
        assert service_pb2_grpc.GRPCInferenceServiceStub(chan).ServerLive(
            service_pb2.ServerLiveRequest(), wait_for_ready=True, timeout=60).live
