"""V2 over a TensorFlow SavedModel: TF Serving's half_plus_two test model (y = x / 2 + 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask.testing import FlaskClient

pytestmark = pytest.mark.tensorflow

HEADER = "Inference-Header-Content-Length"


@pytest.fixture(scope="module")
def tf_client(make_app: Any, tfserving_models: Path) -> FlaskClient:
    half_plus_two = tfserving_models / "saved_model_half_plus_two_cpu"
    app = make_app({"half": {"base_path": str(half_plus_two), "predictor": "tensorflow"}},
                   protocols=["kserve_v2"])
    return app.test_client()


def test_metadata_maps_the_default_signature(tf_client: FlaskClient) -> None:
    assert tf_client.get("/v2/models/half").get_json() == {
        "name": "half", "versions": ["123"], "platform": "tensorflow_savedmodel",
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 1]}],
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 1]}]}
    assert tf_client.get("/v2/models/half/versions/123/ready").status_code == 200


def test_infer_json(tf_client: FlaskClient) -> None:
    body = {"id": "t", "inputs": [{"name": "x", "datatype": "FP32", "shape": [3, 1],
                                   "data": [1.0, 2.0, 5.0]}]}
    got = tf_client.post("/v2/models/half/infer", json=body)
    assert got.status_code == 200
    assert got.get_json() == {"model_name": "half", "model_version": "123", "id": "t",
                              "outputs": [{"name": "y", "datatype": "FP32", "shape": [3, 1],
                                           "data": [2.5, 3.0, 4.5]}]}


def test_infer_binary_with_a_cast_from_fp64(tf_client: FlaskClient) -> None:
    x = np.array([[1.0], [2.0]])
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "shape": [2, 1],
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "outputs": [{"name": "y", "parameters": {"binary_data": True}}]})
    got = tf_client.post("/v2/models/half/versions/123/infer",
                         data=header.encode() + x.tobytes(), headers={HEADER: str(len(header))})
    assert got.status_code == 200
    length = int(got.headers[HEADER])
    head = json.loads(got.data[:length])
    assert head["outputs"][0]["parameters"] == {"binary_data_size": 8}
    assert np.frombuffer(got.data[length:], dtype="<f4").tolist() == [2.5, 3.0]


def test_a_column_fills_an_input_declared_n_by_1(tf_client: FlaskClient) -> None:
    """x is declared [-1, 1]: a column of [3] fills it, as skl2onnx's columns."""
    got = tf_client.post("/v2/models/half/infer", json={"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [3], "data": [1, 2, 3]}]})
    assert got.status_code == 200, got.get_json()
    (y,) = got.get_json()["outputs"]
    assert (y["shape"], y["data"]) == ([3, 1], [2.5, 3.0, 3.5])


@pytest.mark.parametrize("tensor, expected", [
    ({"datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]},
     "expected shape [-1, 1], got [1, 3]"),
    ({"datatype": "BYTES", "shape": [1, 1], "data": ["a"]}, "the model expects FP32, got BYTES"),
])
def test_bad_input(tf_client: FlaskClient, tensor: dict[str, Any], expected: str) -> None:
    got = tf_client.post("/v2/models/half/infer", json={"inputs": [{"name": "x", **tensor}]})
    assert got.status_code == 400
    assert expected in got.get_json()["error"]
