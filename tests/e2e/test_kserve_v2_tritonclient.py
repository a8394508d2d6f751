"""The real ``tritonclient.http`` client against a real gunicorn server with 2 workers.

Its defaults send binary inputs and ask for binary outputs, so these tests prove the binary
tensor data extension; ``binary_data=False`` proves the JSON path.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest
import requests
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3], [7.7, 3.0, 6.1, 2.3]])


@pytest.fixture(scope="module")
def server(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GunicornServer]:
    log = tmp_path_factory.mktemp("gunicorn") / "server.log"
    with GunicornServer(model_config, workers=2, log_path=log) as running:
        yield running


@pytest.fixture()
def triton(server: GunicornServer) -> Iterator[Any]:
    client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
    yield client
    client.close()


def test_health(triton: Any) -> None:
    assert triton.is_server_live()
    assert triton.is_server_ready()
    assert triton.is_model_ready("iris")
    assert triton.is_model_ready("xgb", "1")
    assert not triton.is_model_ready("nope")


def test_server_and_model_metadata(triton: Any) -> None:
    server = triton.get_server_metadata()
    assert server["name"] == "flask-predict"
    assert "binary_tensor_data" in server["extensions"]
    iris = triton.get_model_metadata("iris")
    assert iris["inputs"] == [{"name": "inputs", "datatype": "FP64", "shape": [-1, 4]}]
    assert [o["name"] for o in iris["outputs"]] == ["predict", "predict_proba"]
    with pytest.raises(InferenceServerException) as caught:
        triton.get_model_metadata("nope")
    assert caught.value.status() == "404"
    assert "not found" in caught.value.message()


def iris_input(binary: bool, dtype: Any = np.float64) -> Any:
    rows = ROWS.astype(dtype)
    name = "FP64" if dtype == np.float64 else "FP32"
    tensor = httpclient.InferInput("input-0", list(rows.shape), name)
    tensor.set_data_from_numpy(rows, binary_data=binary)
    return tensor


def test_infer_with_defaults_is_binary_both_ways(triton: Any) -> None:
    for _ in range(4):  # several requests, so both workers answer
        result = triton.infer("iris", [iris_input(binary=True)], request_id="req-7")
        assert result.get_response()["id"] == "req-7"
        assert result.get_response()["model_version"] == "1"
        assert result.as_numpy("predict").tolist() == [0, 1, 2]
        proba = result.as_numpy("predict_proba")
        assert proba.shape == (3, 3) and proba.dtype == np.float64
        assert np.allclose(proba.sum(axis=1), 1.0)
        outputs = result.get_response()["outputs"]
        assert all("binary_data_size" in o["parameters"] for o in outputs)


def test_infer_json_both_ways(triton: Any) -> None:
    requested = [httpclient.InferRequestedOutput("predict", binary_data=False)]
    result = triton.infer("iris", [iris_input(binary=False, dtype=np.float32)],
                          outputs=requested, model_version="1")
    (output,) = result.get_response()["outputs"]
    assert output["data"] == [0, 1, 2]
    assert result.as_numpy("predict").tolist() == [0, 1, 2]


def test_infer_xgboost_missing_values(triton: Any) -> None:
    rows = np.array([[np.nan, 0.1, 0.2, 0.3], [0.0, 0.1, 0.2, 0.3]], dtype=np.float32)
    tensor = httpclient.InferInput("x", [2, 4], "FP32")
    tensor.set_data_from_numpy(rows)
    scores = triton.infer("xgb", [tensor]).as_numpy("predict")
    assert scores[0] > 0.9 and scores[1] < 0.1


def test_infer_custom_predictor_with_bytes(triton: Any) -> None:
    tensor = httpclient.InferInput("text", [2], "BYTES")
    tensor.set_data_from_numpy(np.array([b"a", b"bc"], dtype=object))
    result = triton.infer("echo", [tensor])
    predictions = result.as_numpy("predictions")
    assert predictions.shape == (2,)
    assert b'"instance":"bc"' in predictions[1]


def test_bad_request_raises_with_the_servers_message(triton: Any) -> None:
    tensor = httpclient.InferInput("x", [1, 3], "FP64")
    tensor.set_data_from_numpy(np.ones((1, 3)))
    with pytest.raises(InferenceServerException) as caught:
        triton.infer("iris", [tensor])
    assert caught.value.status() == "400"
    assert "expected shape [-1, 4], got [1, 3]" in caught.value.message()


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_infer_with_a_compressed_request(triton: Any, algorithm: str) -> None:
    result = triton.infer("iris", [iris_input(binary=True)],
                          request_compression_algorithm=algorithm,
                          response_compression_algorithm=algorithm)
    assert result.as_numpy("predict").tolist() == [0, 1, 2]


def test_classification_with_class_count(triton: Any) -> None:
    requested = [httpclient.InferRequestedOutput("predict_proba", class_count=1)]
    result = triton.infer("iris", [iris_input(binary=True)], outputs=requested)
    top = result.as_numpy("predict_proba")
    assert top.shape == (3, 1)
    assert [item.split(b":")[1:] for item in top[:, 0]] == [[b"0", b"0"], [b"1", b"1"],
                                                              [b"2", b"2"]]


def test_raw_binary_request_over_http(server: GunicornServer) -> None:
    """Triton's raw binary request (tritonclient cannot send it; its parser reads the
    answer): the body is the one input's bytes."""
    answer = requests.post(f"{server.url}/v2/models/iris/infer", data=ROWS.tobytes(),
                           headers={"Inference-Header-Content-Length": "0"}, timeout=30)
    assert answer.status_code == 200, answer.text
    length = int(answer.headers["Inference-Header-Content-Length"])
    result = httpclient.InferResult.from_response_body(answer.content, header_length=length)
    assert result.as_numpy("predict").tolist() == [0, 1, 2]
    refused = requests.post(f"{server.url}/v2/models/iris/infer", data=b"\0" * 12,
                            headers={"Inference-Header-Content-Length": "0"}, timeout=30)
    assert refused.status_code == 400
    assert "can not be deduced" in refused.json()["error"]
