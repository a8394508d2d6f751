"""The ONNX plugin on models made here: a PyTorch exporter's graph, every tensor type, a
converted scikit-learn DataFrame pipeline; declared inputs and outputs as metadata, answers
equal to ONNX Runtime's own, bad input refused naming the input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from flask_predict import InvalidInput
from flask_predict.models.plugins import detect_predictor, manifests
from flask_predict_onnx import ONNXPredictor
from tests.onnx_models import (PIPELINE_ROWS, TYPES, every_type, pipeline, torch_like,
                               torch_like_answer, type_values)


def own_session(folder: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def torch_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    base = tmp_path_factory.mktemp("torch")
    return base / "1", torch_like(base)


def test_a_pytorch_graph_declares_its_named_dynamic_batch(
        torch_model: tuple[Path, dict[str, Any]]) -> None:
    folder, weights = torch_model
    assert detect_predictor(str(folder), {}, manifests()) == "onnx"
    predictor = ONNXPredictor.from_path(str(folder))
    meta = predictor.metadata()
    assert meta.platform == "onnx" and meta.properties["producer"] == "pytorch"
    assert [(s.name, s.datatype, s.shape) for s in meta.signature.inputs] == [
        ("input", "FP32", (-1, 4))]
    assert [(s.name, s.datatype, s.shape) for s in meta.signature.outputs] == [
        ("output", "FP32", (-1, 3))]
    rows = np.random.default_rng(2).normal(size=(5, 4))
    for batch in (rows[:1], rows):  # float64 as JSON decodes it: cast to the model's float
        out = predictor.predict_tensors({"input": batch})["output"]
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, own_session(folder).run(
            None, {"input": batch.astype(np.float32)})[0])
        np.testing.assert_allclose(out, torch_like_answer(weights, batch), rtol=1e-5,
                                   atol=1e-6)
    assert predictor.predict(rows[:2].tolist()) == out[:2].tolist()


@pytest.mark.parametrize(("inputs", "message"), [
    ({"input": np.ones((2, 5))}, "input 'input': expected shape [-1, 4], got [2, 5]"),
    ({"input": np.ones(4)}, "input 'input': expected shape [-1, 4], got [4]"),
    ({"input": np.array([["a"] * 4], dtype=object)}, "input 'input': expected FP32, got text"),
])
def test_bad_input_is_the_clients_error(torch_model: tuple[Path, dict[str, Any]],
                                        inputs: dict[str, np.ndarray], message: str) -> None:
    predictor = ONNXPredictor.from_path(str(torch_model[0]))
    with pytest.raises(InvalidInput) as caught:
        predictor.predict_tensors(inputs)
    assert caught.value.message == message


def test_every_tensor_type_the_protocols_carry(tmp_path: Path) -> None:
    every_type(tmp_path)
    predictor = ONNXPredictor.from_path(str(tmp_path / "1"))
    inputs = predictor.metadata().signature.inputs
    assert {(s.name, s.datatype) for s in inputs} == {(d.lower(), d) for d in TYPES}
    sent = {datatype.lower(): type_values(datatype) for datatype in TYPES}
    sent["bytes"] = np.array([[v.encode() for v in row] for row in sent["bytes"]],
                             dtype=object)  # as the codecs decode text: bytes
    out = predictor.predict_tensors(sent)
    for datatype in TYPES:
        got, want = out[f"{datatype.lower()}_out"], type_values(datatype)
        assert got.tolist() == want.tolist(), datatype
        if datatype != "BYTES":
            assert got.dtype == want.dtype, datatype
    with pytest.raises(InvalidInput, match="input 'int32': expected INT32, got float64"):
        predictor.predict_tensors({**sent, "int32": np.ones((2, 2))})
    with pytest.raises(InvalidInput, match=r"missing input\(s\) \['bool'\]"):
        predictor.predict_tensors({k: v for k, v in sent.items() if k != "bool"})


def test_a_converted_dataframe_pipeline_takes_its_typed_columns(tmp_path: Path) -> None:
    fitted = pipeline(tmp_path)
    predictor = ONNXPredictor.from_path(str(tmp_path / "1"))
    meta = predictor.metadata()
    assert [(s.name, s.datatype, s.shape) for s in meta.signature.inputs] == [
        ("age", "INT64", (-1, 1)), ("income", "FP32", (-1, 1)), ("city", "BYTES", (-1, 1))]
    assert [(s.name, s.datatype) for s in meta.signature.outputs] == [
        ("output_label", "INT64"), ("output_probability", "FP32")]
    columns = {"age": np.array([row["age"] for row in PIPELINE_ROWS], dtype=np.float64),
               "income": np.array([row["income"] for row in PIPELINE_ROWS]),
               "city": np.array([row["city"].encode() for row in PIPELINE_ROWS], dtype=object)}
    with pytest.raises(InvalidInput, match="input 'age': expected INT64, got float64"):
        predictor.predict_tensors(columns)
    columns["age"] = columns["age"].astype(np.int64)
    out = predictor.predict_tensors(columns)  # columns ([N]) fill the declared [N, 1]
    import pandas as pd

    frame = pd.DataFrame(PIPELINE_ROWS).astype({"income": np.float32})
    assert out["output_label"].tolist() == fitted.predict(frame).tolist()
    np.testing.assert_allclose(out["output_probability"], fitted.predict_proba(frame),
                               rtol=1e-5, atol=1e-6)
    instances = [{"age": [row["age"]], "income": [row["income"]], "city": [row["city"]]}
                 for row in PIPELINE_ROWS]
    assert predictor.predict(instances)[0]["output_label"] == out["output_label"][0]


def test_threads_are_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_like(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    predictor = ONNXPredictor.from_path(str(tmp_path / "1"))
    assert predictor.session.get_session_options().intra_op_num_threads == 2
    pinned = ONNXPredictor.from_path(str(tmp_path / "1"), intra_op_num_threads=1)
    assert pinned.session.get_session_options().intra_op_num_threads == 1
    with pytest.raises(TypeError, match="unknown output"):
        ONNXPredictor.from_path(str(tmp_path / "1"), outputs=["nope"])


@pytest.mark.tensorflow
def test_a_keras_model_exported_by_keras(tmp_path: Path) -> None:
    from tests.onnx_models import keras_model

    model = keras_model(tmp_path)
    predictor = ONNXPredictor.from_path(str(tmp_path / "1"))
    (declared,) = predictor.metadata().signature.inputs
    assert (declared.name, declared.datatype, declared.shape) == ("features", "FP32", (-1, 4))
    rows = np.random.default_rng(6).normal(size=(3, 4)).astype(np.float32)
    (output,) = predictor.metadata().signature.outputs
    out = predictor.predict_tensors({"features": rows})[output.name]
    np.testing.assert_array_equal(out, own_session(tmp_path / "1").run(
        None, {"features": rows})[0])
    np.testing.assert_allclose(out, model.predict(rows, verbose=0), rtol=1e-5, atol=1e-6)
