"""TF Serving's warm-up file (TFRecord of PredictionLog) replayed on a real SavedModel."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from tensorflow_serving.apis import (classification_pb2, inference_pb2,  # noqa: E402
                                     input_pb2, predict_pb2, prediction_log_pb2, regression_pb2)

from flask_predict import ConfigError  # noqa: E402
from flask_predict.models.plugins import load_predictor_class  # noqa: E402
from flask_predict.models.repository import ModelRepository  # noqa: E402
from flask_predict.types import ModelSpec  # noqa: E402
from flask_predict.models.warmup import warm_up  # noqa: E402
from flask_predict_tensorflow.warmup import WARMUP_FILE, read_warmup_requests  # noqa: E402

pytestmark = pytest.mark.tensorflow



def example(x: float) -> tf.train.Example:
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x]))}))


def predict_log(inputs: dict[str, np.ndarray], signature: str = "") -> bytes:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half_plus_two"
    request.model_spec.signature_name = signature
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)).SerializeToString()


def example_input(*xs: float, context: float | None = None) -> input_pb2.Input:
    if context is None:
        return input_pb2.Input(example_list=input_pb2.ExampleList(
            examples=[example(x) for x in xs]))
    return input_pb2.Input(example_list_with_context=input_pb2.ExampleListWithContext(
        examples=[tf.train.Example() for _ in xs], context=example(context)))


def other_logs() -> list[bytes]:
    classify = classification_pb2.ClassificationRequest(input=example_input(1.0, 3.0))
    classify.model_spec.signature_name = "classify_x_to_y"
    regress = regression_pb2.RegressionRequest(input=example_input(5.0, context=4.0))
    regress.model_spec.signature_name = "regress_x_to_y"
    multi = inference_pb2.MultiInferenceRequest(input=example_input(2.0))
    for signature in ("classify_x_to_y", "regress_x_to_y2"):
        task = multi.tasks.add()
        task.model_spec.signature_name = signature
    return [
        prediction_log_pb2.PredictionLog(classify_log=prediction_log_pb2.ClassifyLog(
            request=classify)).SerializeToString(),
        prediction_log_pb2.PredictionLog(regress_log=prediction_log_pb2.RegressLog(
            request=regress)).SerializeToString(),
        prediction_log_pb2.PredictionLog(multi_inference_log=prediction_log_pb2.
                                         MultiInferenceLog(request=multi)).SerializeToString(),
    ]


@pytest.fixture()
def half_plus_two(tfserving_models: Path) -> Path:
    """The version folder of TF Serving's half_plus_two test model."""
    return tfserving_models / "saved_model_half_plus_two_cpu" / "00000123"


def version_with_warmup(source: Path, base: Path, version: int, records: list[bytes]) -> Path:
    folder = base / str(version)
    shutil.copytree(source, folder)
    (folder / "assets.extra").mkdir()
    with tf.io.TFRecordWriter(str(folder / WARMUP_FILE)) as writer:
        for record in records:
            writer.write(record)
    return folder


def test_reads_every_log_kind(tmp_path: Path, half_plus_two: Path) -> None:
    x = np.asarray([[1.0], [2.0]], dtype=np.float32)
    folder = version_with_warmup(half_plus_two, tmp_path, 1, [predict_log({"x": x}), *other_logs()])
    requests = read_warmup_requests(str(folder))
    assert len(requests) == 5
    predict = requests[0]
    assert predict.signature is None and predict.model == "half_plus_two"
    np.testing.assert_array_equal(predict.inputs["x"], x)
    assert [r.signature for r in requests[1:]] == [
        "classify_x_to_y", "regress_x_to_y", "classify_x_to_y", "regress_x_to_y2"]
    classified = [tf.train.Example.FromString(s) for s in requests[1].inputs["inputs"]]
    assert [e.features.feature["x"].float_list.value[0] for e in classified] == [1.0, 3.0]
    regressed = tf.train.Example.FromString(requests[2].inputs["inputs"][0])
    assert regressed.features.feature["x"].float_list.value[0] == 4.0  # from the context


def test_no_file_and_bad_files(tmp_path: Path) -> None:
    assert read_warmup_requests(str(tmp_path)) == []
    (tmp_path / "assets.extra").mkdir()
    (tmp_path / WARMUP_FILE).write_bytes(b"this is not a TFRecord file at all")
    with pytest.raises(ConfigError, match="not a readable TFRecord"):
        read_warmup_requests(str(tmp_path))
    with tf.io.TFRecordWriter(str(tmp_path / WARMUP_FILE)) as writer:
        writer.write(b"\xff\xff\xff")
    with pytest.raises(ConfigError, match="record 0: not a PredictionLog"):
        read_warmup_requests(str(tmp_path))
    session_run = prediction_log_pb2.PredictionLog(
        session_run_log=prediction_log_pb2.SessionRunLog())
    with tf.io.TFRecordWriter(str(tmp_path / WARMUP_FILE)) as writer:
        writer.write(session_run.SerializeToString())
    with pytest.raises(ConfigError, match="unsupported log type 'session_run_log'"):
        read_warmup_requests(str(tmp_path))


def test_warmup_replayed_before_the_version_is_served(tmp_path: Path,
                                                     half_plus_two: Path) -> None:
    x = np.asarray([[1.0]], dtype=np.float32)
    version_with_warmup(half_plus_two, tmp_path, 1, [predict_log({"x": x}), *other_logs()])
    spec = ModelSpec(name="half_plus_two", base_path=str(tmp_path))
    repository = ModelRepository.load([spec], load_predictor_class)
    loaded = repository.get("half_plus_two")
    assert loaded.predictor.predict_tensors({"x": x})["y"].tolist() == [[2.5]]
    assert warm_up(loaded.predictor, loaded.path) == 5  # every record replays on the loaded model
    # a warm-up request the model refuses makes the version fail; version 1 stays
    version_with_warmup(half_plus_two, tmp_path, 2, [predict_log({"nope": x})])
    repository.sync([spec])
    assert repository.get("half_plus_two").version == 1
    error = repository.model("half_plus_two").statuses[2].cause
    assert "warm-up request 0 failed" in error and "Missing inputs: x" in error
    repository.close()
