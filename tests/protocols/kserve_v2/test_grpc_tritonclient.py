"""``tritonclient.grpc`` reads our V2 gRPC answers, whatever form the request came in.

Triton answers every ``ModelInfer`` in ``raw_output_contents``, and ``InferResult.as_numpy``
reads nothing else; Triton's explicit-content example clients send typed ``contents`` and
read ``raw_output_contents[i]`` with ``np.frombuffer``. An identity model sends every
datatype back, through a real gRPC server on a free port.
"""

from __future__ import annotations

from typing import Any, Iterator

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from flask_predict.process.worker_hooks import start_grpc, stop_grpc
from flask_predict.protocols.kserve_v2.grpc_tensors import V2_CONTENTS
from tests.grpc_app import serving
from tests.protocols.kserve_v2.test_kserve_v2 import identity_app

ARRAYS: dict[str, np.ndarray] = {
    "BOOL": np.array([[True, False, True]]),
    "UINT8": np.array([[0, 7, 255]], np.uint8),
    "UINT16": np.array([[0, 7, 65535]], np.uint16),
    "UINT32": np.array([[0, 7, 4294967295]], np.uint32),
    "UINT64": np.array([[0, 7, 2**64 - 1]], np.uint64),
    "INT8": np.array([[-128, 0, 127]], np.int8),
    "INT16": np.array([[-32768, 0, 32767]], np.int16),
    "INT32": np.array([[-2**31, 0, 2**31 - 1]], np.int32),
    "INT64": np.array([[-2**63, 0, 2**63 - 1]], np.int64),
    "FP16": np.array([[-1.5, 0.25, 65504.0]], np.float16),
    "FP32": np.array([[-1.5, 0.25, 3.0e38]], np.float32),
    "FP64": np.array([[-1.5, 0.25, 1.0e300]], np.float64),
    "BYTES": np.array([[b"a", b"", "h\u00e9llo".encode()]], dtype=object),
}


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    app = identity_app(tmp_path_factory.mktemp("identity"), PREDICT_GRPC_PORT=0,
                       PREDICT_GRPC_HOST="127.0.0.1")
    server = start_grpc(app)
    try:
        yield server.port
    finally:
        stop_grpc(app, grace=0)


@pytest.fixture()
def stub(port: int) -> Iterator[Any]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield service_pb2_grpc.GRPCInferenceServiceStub(channel)


def typed_request(datatype: str, array: np.ndarray) -> Any:
    """A request as Triton's explicit-content clients build it: values in typed contents."""
    request = service_pb2.ModelInferRequest(model_name="same")
    tensor = request.inputs.add(name="x", datatype=datatype, shape=list(array.shape))
    getattr(tensor.contents, V2_CONTENTS[datatype]).extend(array.reshape(-1).tolist())
    return request


TYPED = [d for d in ARRAYS if d in V2_CONTENTS]


@pytest.mark.parametrize("datatype", TYPED)
def test_typed_request_answers_raw_contents_tritonclient_reads(stub: Any, datatype: str
                                                             ) -> None:
    array = ARRAYS[datatype]
    response = stub.ModelInfer(typed_request(datatype, array))
    assert len(response.raw_output_contents) == 1
    assert not response.outputs[0].HasField("contents")
    got = grpcclient.InferResult(response).as_numpy("x")
    assert got.dtype == array.dtype and got.shape == array.shape
    assert got.tolist() == array.tolist()
    if datatype != "BYTES":  # what the explicit-content examples do
        flat = np.frombuffer(response.raw_output_contents[0], dtype=array.dtype)
        assert flat.tolist() == array.reshape(-1).tolist()


@pytest.mark.parametrize("datatype", list(ARRAYS))
def test_tritonclient_infer_round_trips_every_datatype(port: int, datatype: str) -> None:
    array = ARRAYS[datatype]
    tensor = grpcclient.InferInput("x", list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        result = client.infer("same", [tensor])
    finally:
        client.close()
    got = result.as_numpy("x")
    assert got.dtype == array.dtype and got.tolist() == array.tolist()


def test_classification_answers_raw_bytes(model_config: dict[str, Any]) -> None:
    rows = np.array([[5.1, 3.5, 1.4, 0.2]])
    for _, grpc_port in serving(model_config):
        request = service_pb2.ModelInferRequest(model_name="iris")
        request.inputs.add(name="inputs", datatype="FP64", shape=[1, 4]
                           ).contents.fp64_contents.extend(rows.reshape(-1).tolist())
        request.outputs.add(name="predict_proba").parameters["classification"].int64_param = 1
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            answer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
        (top,) = grpcclient.InferResult(answer).as_numpy("predict_proba").reshape(-1)
        assert top.endswith(b":0:0")  # value:index:label of setosa
