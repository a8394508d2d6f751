"""Triton's raw binary request: ``Inference-Header-Content-Length: 0`` and the whole body is
the one input's bytes; the input's datatype and shape come from the model's metadata, the
variable dimension from the byte count, and every output comes back binary. The answers are
read with tritonclient.http's own parser (it cannot send this form itself)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pytest
import tritonclient.http as httpclient
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict, Predictor
from flask_predict.types import DEFAULT_SIGNATURE, ModelMetadata, Signature, Tensor, TensorSpec

RAW = {"Inference-Header-Content-Length": "0"}
ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3], [7.7, 3.0, 6.1, 2.3]])


class DeclaredIdentity(Predictor):
    """Answers its inputs; its inputs are the ones ``inputs.json`` in its folder declares."""

    def __init__(self, inputs: tuple[TensorSpec, ...]) -> None:
        self.inputs = inputs

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> DeclaredIdentity:
        declared = json.loads((Path(model_dir) / "inputs.json").read_text())
        return cls(tuple(TensorSpec(name, datatype, tuple(shape))
                         for name, datatype, shape in declared))

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        return {f"{name}_out": value for name, value in inputs.items()}

    def metadata(self) -> ModelMetadata:
        outputs = tuple(TensorSpec(f"{s.name}_out", s.datatype, s.shape) for s in self.inputs)
        return ModelMetadata("declared", {DEFAULT_SIGNATURE: Signature(self.inputs, outputs)})


DECLARED = {"vector": [["x", "FP32", [-1, 8]]],
            "text": [["t", "BYTES", [-1]]],
            "texts": [["t", "BYTES", [-1, 2]]],
            "two_variable": [["h", "FP16", [-1, -1]]],
            "three_inputs": [["a", "FP32", [-1]], ["b", "FP32", [-1]], ["c", "FP32", [-1]]]}


@pytest.fixture(scope="module")
def raw_client(tmp_path_factory: pytest.TempPathFactory, model_config: dict[str, Any]
               ) -> FlaskClient:
    root = tmp_path_factory.mktemp("declared")
    models: dict[str, Any] = {"iris": model_config["iris"], "xgb": model_config["xgb"],
                              "echo": model_config["echo"]}
    for name, inputs in DECLARED.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "1" / "inputs.json").write_text(json.dumps(inputs))
        models[name] = {"base_path": str(root / name), "predictor": "declared"}
    predict = FlaskPredict()
    predict.register_predictor("declared", DeclaredIdentity)
    app = Flask("raw_app")
    app.config.update(PREDICT_MODELS=models, PREDICT_POLL_SECONDS=0,
                      PREDICT_PROTOCOLS=["kserve_v2"])
    predict.init_app(app)
    return app.test_client()


def result(answer: Any) -> Any:
    """The answer as tritonclient.http reads a binary one."""
    assert answer.status_code == 200, answer.get_data()
    assert answer.mimetype == "application/octet-stream"
    length = int(answer.headers["Inference-Header-Content-Length"])
    return httpclient.InferResult.from_response_body(answer.get_data(), header_length=length)


def test_the_body_is_the_one_inputs_bytes(raw_client: FlaskClient) -> None:
    got = result(raw_client.post("/v2/models/iris/infer", data=ROWS.astype("<f8").tobytes(),
                                 headers=RAW))
    assert got.as_numpy("predict").tolist() == [0, 1, 2]
    assert got.as_numpy("predict_proba").shape == (3, 3)
    assert all("binary_data_size" in o["parameters"] for o in got.get_response()["outputs"])


def test_the_variable_dimension_comes_from_the_byte_count(raw_client: FlaskClient) -> None:
    for rows in (1, 4):
        values = np.arange(8 * rows, dtype="<f4")
        got = result(raw_client.post("/v2/models/vector/infer", data=values.tobytes(),
                                     headers=RAW))
        assert got.as_numpy("x_out").tolist() == values.reshape(rows, 8).tolist()


def test_a_bytes_input_is_one_element(raw_client: FlaskClient) -> None:
    got = result(raw_client.post("/v2/models/text/infer", data=b"427", headers=RAW))
    assert got.as_numpy("t_out").tolist() == [b"427"]


@pytest.mark.parametrize("model, body, error", [
    ("three_inputs", b"\0" * 12, "Raw request must only have 1 input (found 1) to be deduced "
                                 "but got 3 inputs in 'three_inputs' model configuration"),
    ("echo", b"abc", "The shape of the raw input 'instances' can not be deduced because "
                     "the model does not declare it"),
    ("two_variable", b"\0" * 8, "The shape of the raw input 'h' can not be deduced because "
                                "there are more than one variable-sized dimension"),
    ("texts", b"427", "For BYTE datatype raw input 't', the model must have input shape [1]"),
    ("iris", b"\0" * 40, "The shape of the raw input 'inputs' can not be deduced: 40 bytes "
                         "are no whole number of 32-byte steps of FP64 [-1, 4]"),
    ("iris", b"", "a raw binary request (Inference-Header-Content-Length: 0) needs the "
                  "input's bytes as its body; the body is empty"),
])
def test_an_input_that_cannot_be_deduced_is_refused(raw_client: FlaskClient, model: str,
                                                    body: bytes, error: str) -> None:
    answer = raw_client.post(f"/v2/models/{model}/infer", data=body, headers=RAW)
    assert answer.status_code == 400
    assert answer.get_json() == {"error": error}


def test_a_compressed_raw_body(raw_client: FlaskClient) -> None:
    got = result(raw_client.post("/v2/models/iris/infer",
                                 data=gzip.compress(ROWS.astype("<f8").tobytes()),
                                 headers={**RAW, "Content-Encoding": "gzip"}))
    assert got.as_numpy("predict").tolist() == [0, 1, 2]
