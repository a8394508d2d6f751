"""The TensorFlow plugin on TF Serving's own exports and on a TF2 model exported here."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from flask_predict import InvalidInput  # noqa: E402
from flask_predict.errors import UnreadableModel  # noqa: E402
from flask_predict.models.plugins import load_predictor_class  # noqa: E402
from flask_predict_tensorflow import TensorFlowPredictor, datatype  # noqa: E402
from flask_predict_tensorflow.devices import configure_devices  # noqa: E402
from flask_predict_tensorflow.examples import serialize_examples, to_example  # noqa: E402
from tests.tf_models import TAG, export_multi  # noqa: E402

pytestmark = pytest.mark.tensorflow


def version_dir(tfserving: Path, name: str) -> str:
    (folder,) = [p for p in (tfserving / name).iterdir() if p.name.isdigit()]
    return os.fspath(folder)


@pytest.fixture(scope="module")
def half_plus_two(tfserving_models: Path) -> TensorFlowPredictor:
    return TensorFlowPredictor.from_path(version_dir(tfserving_models,
                                                     "saved_model_half_plus_two_cpu"))


@pytest.fixture(scope="module")
def half_plus_three(tfserving_models: Path) -> TensorFlowPredictor:
    return TensorFlowPredictor.from_path(version_dir(tfserving_models,
                                                     "saved_model_half_plus_three"))


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> TensorFlowPredictor:
    base = export_multi(tmp_path_factory.mktemp("multi") / "multi")
    return TensorFlowPredictor.from_path(os.fspath(base / "1"))


def floats(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def test_entry_point_finds_the_plugin() -> None:
    assert load_predictor_class("tensorflow") is TensorFlowPredictor


def test_tf1_export_predicts(half_plus_two: TensorFlowPredictor) -> None:
    out = half_plus_two.predict_tensors({"x": floats(1.0, 2.0, 5.0)})
    assert out["y"].dtype == np.float32 and out["y"].tolist() == [2.5, 3.0, 4.5]


def test_shape_lenient_like_tf_serving(half_plus_two: TensorFlowPredictor) -> None:
    # x is declared [-1, 1]; TF Serving feeds [3], [2, 2] and scalars as they come
    assert half_plus_two.predict_tensors({"x": floats(1.0, 2.0)})["y"].shape == (2,)
    matrix = half_plus_two.predict_tensors({"x": floats(1, 2, 3, 4).reshape(2, 2)})["y"]
    assert matrix.tolist() == [[2.5, 3.0], [3.5, 4.0]]
    assert half_plus_two.predict_tensors({"x": np.float32(2.0) * np.ones(())})["y"] == 3.0


def test_old_export_only_the_v1_loader_reads(half_plus_three: TensorFlowPredictor) -> None:
    assert half_plus_three.predict_tensors({"x": floats(1, 2, 5)})["y"].tolist() == [3.5, 4, 5.5]
    examples = [{"x": floats(1.0)}, {"x": floats(2.0)}]
    assert half_plus_three.regress(examples, "tensorflow/serving/regress").tolist() == [3.5, 4.0]


def test_native_tf2_export(tfserving_models: Path) -> None:
    predictor = TensorFlowPredictor.from_path(
        version_dir(tfserving_models, "saved_model_half_plus_two_tf2_cpu"))
    assert predictor.predict_tensors({"x": floats(1, 2, 5)})["y"].tolist() == [2.5, 3.0, 4.5]
    assert predictor.classify([{"x": floats(2.0)}], "classify_x_to_y").scores.tolist() == [[3.0]]


def test_counter_ref_typed_outputs(tfserving_models: Path) -> None:
    counter = TensorFlowPredictor.from_path(version_dir(tfserving_models, "saved_model_counter"))
    assert set(counter.metadata().signatures) == {"get_counter", "incr_counter",
                                                  "incr_counter_by", "reset_counter"}
    delta = np.float32(2.0) * np.ones(())
    assert counter.predict_tensors({"delta": delta}, None, "incr_counter_by")["output"] == 2.0
    assert counter.predict_tensors({"delta": delta}, None, "incr_counter_by")["output"] == 4.0


def test_metadata_from_the_proto(half_plus_two: TensorFlowPredictor) -> None:
    meta = half_plus_two.metadata()
    assert meta.platform == "tensorflow"
    assert sorted(meta.signatures) == ["classify_x_to_y", "regress_x2_to_y3", "regress_x_to_y",
                                       "regress_x_to_y2", "serving_default"]
    x = meta.signature.input("x")
    assert x is not None and (x.datatype, x.shape, x.tensor_name) == ("FP32", (-1, 1), "x:0")
    inputs = meta.signatures["classify_x_to_y"].input("inputs")
    assert inputs is not None and inputs.shape is None and inputs.datatype == "BYTES"
    assert meta.signatures["regress_x_to_y"].method_name == "tensorflow/serving/regress"


def test_several_signatures_strings_and_integers(multi: TensorFlowPredictor) -> None:
    out = multi.predict_tensors({"x": floats(1.4, 2.6), "s": np.array([b"ab", b"c"], object)})
    assert out["doubled"].tolist() == pytest.approx([2.8, 5.2])
    assert out["rounded"].dtype == np.int64 and out["rounded"].tolist() == [1, 3]
    assert out["upper"].tolist() == [b"AB", b"C"]
    assert out["tagged_bytes"].tolist() == [b"ab" + TAG, b"c" + TAG]
    assert multi.predict_tensors({"n": np.array([1, 2], np.int32)}, None, "ints")["m"].tolist() \
        == [2, 3]
    only = multi.predict_tensors({"x": floats(1.0), "s": np.array([b"a"], object)}, ["upper"])
    assert list(only) == ["upper"]


def test_classify_and_regress(multi: TensorFlowPredictor) -> None:
    result = multi.classify([{"x": floats(0.25)}], "classify")
    assert result.classes is not None and result.classes.tolist() == [[b"pos", b"neg"]]
    assert result.scores is not None and result.scores.tolist() == [[0.25, 0.75]]
    assert multi.regress([{"x": floats(0.5)}, {"x": floats(1.0)}], "regress").tolist() == [5, 10]


def test_errors_are_client_errors(multi: TensorFlowPredictor,
                                  half_plus_two: TensorFlowPredictor) -> None:
    with pytest.raises(InvalidInput, match='Serving signature name: "nope"'):
        multi.predict_tensors({"x": floats(1.0)}, None, "nope")
    with pytest.raises(InvalidInput, match="input size does not match signature"):
        multi.predict_tensors({"x": floats(1.0)})
    with pytest.raises(InvalidInput, match="expected float32 values, got strings"):
        half_plus_two.predict_tensors({"x": np.array([b"a"], object)})
    # a cast that would change a value is refused: infinity, a fraction cut, a wrapped integer
    with pytest.raises(InvalidInput, match="a value is out of range for float"):
        half_plus_two.predict_tensors({"x": np.array([1e300, 1.0])})
    with pytest.raises(InvalidInput, match="expected int32 values, got float64"):
        multi.predict_tensors({"n": np.array([1.5, 2.0])}, None, "ints")
    with pytest.raises(InvalidInput, match="a value is out of range for int32"):
        multi.predict_tensors({"n": np.array([2 ** 40])}, None, "ints")
    assert half_plus_two.predict_tensors({"x": np.array([1.0, 2])})["y"].tolist() == [2.5, 3.0]
    assert multi.predict_tensors({"n": np.array([True, 2])}, None, "ints")["m"].tolist() == [2, 3]
    with pytest.raises(InvalidInput, match="int64"):  # ParseExample's own message
        half_plus_two.regress([{"x": np.array([2], np.int64)}], "regress_x_to_y")
    with pytest.raises(InvalidInput, match="No regression outputs found"):
        multi.regress([{"x": floats(1.0)}], "classify")
    with pytest.raises(InvalidInput, match="No classification inputs found"):
        multi.classify([{"x": floats(1.0)}], "scale")


def test_unknown_option_and_missing_tags(tfserving_models: Path) -> None:
    folder = version_dir(tfserving_models, "saved_model_half_plus_two_cpu")
    with pytest.raises(TypeError, match="unknown TensorFlow option"):
        TensorFlowPredictor.from_path(folder, colour=1)
    with pytest.raises(FileNotFoundError, match="no MetaGraph tagged"):
        TensorFlowPredictor.from_path(folder, tags=["gpu"])


def test_examples_build_tf_example_protos() -> None:
    example = to_example({"f": floats(1.5), "i": np.array([1, 2], np.int64),
                          "b": np.array([b"\x00"], object)})
    feature = example.features.feature
    assert list(feature["f"].float_list.value) == [1.5]
    assert list(feature["i"].int64_list.value) == [1, 2]
    assert list(feature["b"].bytes_list.value) == [b"\x00"]
    assert serialize_examples([{"x": floats(2.0)}])[0] == to_example(
        {"x": floats(2.0)}).SerializeToString()


def test_datatype_names() -> None:
    assert [datatype(n) for n in (1, 2, 3, 7, 9, 10, 101)] == [
        "FP32", "FP64", "INT32", "BYTES", "INT64", "BOOL", "FP32"]  # 101: DT_FLOAT_REF


# --- GPU memory (placement is the server's: tests/unit/runtime/test_resources.py) --------------------------------------------------------------------------

def test_configure_devices_without_gpu_runs_on_cpu(half_plus_two: TensorFlowPredictor) -> None:
    import tensorflow as tf

    configure_devices()  # idempotent; on a machine without GPU it changes nothing
    if not tf.config.list_physical_devices("GPU"):
        assert half_plus_two.predict_tensors({"x": floats(1.0)})["y"].tolist() == [2.5]


@pytest.mark.parametrize("file, data, why", [
    ("saved_model.pb", b"", "the file is empty"),
    ("saved_model.pb", b"\x08\x01garbage", "not a SavedModel (DecodeError: "),
    ("saved_model.pbtxt", b"meta_graphs { nonsense", "not a SavedModel (ParseError: "),
])
def test_an_unreadable_saved_model_says_so_in_one_line(tmp_path: Path, file: str, data: bytes,
                                                       why: str) -> None:
    (tmp_path / file).write_bytes(data)
    with pytest.raises(UnreadableModel) as caught:
        TensorFlowPredictor.from_path(str(tmp_path))
    assert caught.value.message.startswith(f"unreadable model file: {why}")
    assert "\n" not in caught.value.message


def test_a_small_step_on_the_callers_thread_answers_as_the_pool_does(
        half_plus_two: TensorFlowPredictor) -> None:
    """A few values run on the calling thread, many on TensorFlow's pool: same answers."""
    from flask_predict_tensorflow import predictor

    values = np.arange(predictor.CALLER_THREAD_VALUES + 1, dtype=np.float32)
    large = half_plus_two.predict_tensors({"x": values})["y"]  # past the limit: the pool
    small = half_plus_two.predict_tensors({"x": values[:3]})["y"]
    assert large.tolist() == (values * 0.5 + 2).tolist()  # halves and +2: exact in float32
    assert small.tolist() == large[:3].tolist()
    assert predictor._run_options(None, 3) is predictor._CALLER_THREAD
    assert predictor._run_options(None, values.size) is None
    assert predictor._run_options(1.5, 3).timeout_in_ms == 1500
