"""A DataFrame's columns as V2 sends them (``[N]``, the pandas codec of KServe's and
MLServer's clients) fill inputs declared ``[N, 1]``: a real skl2onnx pipeline converted
from a frame, over REST and gRPC; ``[N, 1]`` still works, and a wrong shape is still
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import pytest
import tritonclient.grpc as grpcclient
from flask.testing import FlaskClient

from tests.conftest import AppFactory
from tests.grpc_app import serving
from tests.onnx_models import PIPELINE_ROWS, pipeline

pytest.importorskip("onnxruntime")

DATATYPES = {"age": "INT64", "income": "FP32", "city": "BYTES"}


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    base = tmp_path_factory.mktemp("onnx_pipeline")
    return base, pipeline(base)


@pytest.fixture(scope="module")
def config(fitted: tuple[Path, Any]) -> dict[str, Any]:
    return {"people": {"base_path": str(fitted[0])}}


def columns(shape_of: Any) -> dict[str, Any]:
    """A V2 request with one input per column, each of the shape ``shape_of(n)``."""
    rows = len(PIPELINE_ROWS)
    return {"parameters": {"content_type": "pd"}, "inputs": [
        {"name": name, "datatype": datatype, "shape": shape_of(rows),
         "data": [row[name] for row in PIPELINE_ROWS],
         **({"parameters": {"content_type": "str"}} if datatype == "BYTES" else {})}
        for name, datatype in DATATYPES.items()]}


def expected_labels(fitted: tuple[Path, Any]) -> list[int]:
    frame = pd.DataFrame(PIPELINE_ROWS).astype({"income": np.float32})
    return [int(label) for label in fitted[1].predict(frame)]


@pytest.mark.parametrize("shape_of", [lambda n: [n], lambda n: [n, 1]], ids=["N", "N,1"])
def test_columns_fill_inputs_declared_n_by_1(make_app: AppFactory, config: dict[str, Any],
                                             fitted: tuple[Path, Any], shape_of: Any) -> None:
    client: FlaskClient = make_app(config, protocols=["kserve_v2"]).test_client()
    got = client.post("/v2/models/people/infer", data=json.dumps(columns(shape_of)))
    assert got.status_code == 200, got.get_json()
    outputs = {o["name"]: o for o in got.get_json()["outputs"]}
    assert outputs["output_label"]["data"] == expected_labels(fitted)


def test_a_shape_that_does_not_fit_is_still_refused(make_app: AppFactory,
                                                    config: dict[str, Any]) -> None:
    client = make_app(config, protocols=["kserve_v2"]).test_client()
    body = columns(lambda n: [n])
    body["inputs"][0].update(shape=[1, 3])  # a row, not a column
    got = client.post("/v2/models/people/infer", data=json.dumps(body))
    assert got.status_code == 400
    assert got.get_json() == {"error": "input 'age': expected shape [-1, 1], got [1, 3]"}


@pytest.fixture(scope="module")
def grpc_port(config: dict[str, Any]) -> Iterator[int]:
    for _, port in serving(config, protocols=["kserve_v2"]):
        yield port


def test_columns_over_grpc(grpc_port: int, fitted: tuple[Path, Any]) -> None:
    tensors = []
    for name, datatype in DATATYPES.items():
        values = [row[name] for row in PIPELINE_ROWS]
        array = (np.array([v.encode() for v in values], dtype=object) if datatype == "BYTES"
                 else np.array(values, dtype=datatype.lower().replace("fp", "float")))
        tensor = grpcclient.InferInput(name, [len(values)], datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
    try:
        result = client.infer("people", tensors)
    finally:
        client.close()
    assert result.as_numpy("output_label").tolist() == expected_labels(fitted)
