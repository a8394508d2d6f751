"""Clients written against Triton and KServe look for their words: Triton's texts for an
unknown model or version (REST and gRPC, as its own tests read them), its nesting limit,
and KServe's output names for a client that migrates from KServe's model servers."""

from __future__ import annotations

import json
from typing import Any, Iterator

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from flask.testing import FlaskClient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from tests.grpc_app import serving

ROW = [5.1, 3.5, 1.4, 0.2]


def infer_body(data: Any, shape: list[int], **extra: Any) -> bytes:
    return json.dumps({"inputs": [{"name": "input-0", "datatype": "FP64", "shape": shape,
                                   "data": data}], **extra}).encode()


@pytest.mark.parametrize("path, method, error", [
    ("/v2/models/nope", "GET", "Request for unknown model: 'nope' is not found"),
    ("/v2/models/nope/ready", "GET", "Request for unknown model: 'nope' is not found"),
    ("/v2/models/nope/infer", "POST", "Request for unknown model: 'nope' is not found"),
    ("/v2/models/iris/versions/99", "GET",
     "Request for unknown model: 'iris' version 99 is not found"),
    ("/v2/models/iris/versions/99/ready", "GET",
     "Request for unknown model: 'iris' version 99 is not found"),
    ("/v2/models/iris/versions/99/infer", "POST",
     "Request for unknown model: 'iris' version 99 is not found"),
])
def test_unknown_model_and_version_in_tritons_words(client: FlaskClient, path: str,
                                                    method: str, error: str) -> None:
    got = client.open(path, method=method, data=infer_body(ROW, [1, 4]))
    assert got.status_code == 404
    assert got.get_json() == {"error": error}


def test_a_body_nests_as_deep_as_tritons_limit_on_data(client: FlaskClient) -> None:
    """Triton's limit is 100 levels of an input's data; counted from the body, the three
    levels around the data (body, inputs, input) come on top: 103 (numpy itself stops data
    at 64 dimensions, so the levels are spent in a parameter here)."""
    fine = infer_body(ROW, [1, 4], parameters={"deep": nested(1, 101)})  # 2 + 101 levels
    assert client.post("/v2/models/iris/infer", data=fine).status_code == 200
    deep = infer_body(ROW, [1, 4], parameters={"deep": nested(1, 102)})
    got = client.post("/v2/models/iris/infer", data=deep)
    assert got.status_code == 400
    assert got.get_json() == {"error": "JSON nesting depth exceeds maximum allowed limit (100)"}
    sixty = infer_body(nested(ROW, 59), [1, 4])  # nested data, 60 levels
    assert client.post("/v2/models/iris/infer", data=sixty).status_code == 200


def nested(data: Any, levels: int) -> Any:
    for _ in range(levels):
        data = [data]
    return data


def test_a_kserve_output_name_answers_under_that_name(client: FlaskClient) -> None:
    """KServe's scikit-learn server answers one output, ``output-0``: its predict."""
    got = client.post("/v2/models/iris/infer", data=infer_body(
        ROW + ROW, [2, 4], outputs=[{"name": "output-0"}]))
    assert got.status_code == 200
    (output,) = got.get_json()["outputs"]
    assert (output["name"], output["data"]) == ("output-0", [0, 0])
    both = client.post("/v2/models/iris/infer", data=infer_body(
        ROW, [1, 4], outputs=[{"name": "output-1"}, {"name": "output-0"}])).get_json()
    assert [o["name"] for o in both["outputs"]] == ["output-1", "output-0"]
    assert both["outputs"][0]["shape"] == [1, 3]


@pytest.fixture(scope="module")
def grpc_port(model_config: dict[str, Any]) -> Iterator[int]:
    for _, port in serving(model_config):
        yield port


def test_grpc_unknown_model_and_version_in_tritons_words(grpc_port: int) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
    try:
        for model, version, words in (
                ("nope", "", "Request for unknown model: 'nope' is not found"),
                ("iris", "99", "Request for unknown model: 'iris' version 99 is not found")):
            with pytest.raises(Exception) as caught:
                client.get_model_metadata(model, model_version=version)
            assert caught.value.message() == words  # type: ignore[attr-defined]
            assert caught.value.status() == "StatusCode.NOT_FOUND"  # type: ignore[attr-defined]
    finally:
        client.close()


def test_grpc_kserve_output_name(grpc_port: int) -> None:
    request = service_pb2.ModelInferRequest(model_name="iris")
    request.inputs.add(name="input-0", datatype="FP64", shape=[1, 4]
                       ).contents.fp64_contents.extend(ROW)
    request.outputs.add(name="output-0")
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        answer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
    result = grpcclient.InferResult(answer)
    assert [o.name for o in answer.outputs] == ["output-0"]
    assert result.as_numpy("output-0").tolist() == [0]
    assert result.as_numpy("output-0").dtype == np.int64
