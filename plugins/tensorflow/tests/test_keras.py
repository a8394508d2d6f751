"""Keras files (``.keras`` and ``.h5``) in the TensorFlow plugin: detected, loaded by Keras's
own loader, described as ``model.export()`` describes the same model, and predicting what
``model.predict`` predicts."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from flask_predict import ConfigError, InvalidInput  # noqa: E402
from flask_predict.models.plugins import detect_predictor, manifests  # noqa: E402
from flask_predict_tensorflow import TensorFlowPredictor  # noqa: E402
from flask_predict_tensorflow.keras_model import KerasPredictor  # noqa: E402
from flask_predict_tensorflow.manifest import detect, keras_file  # noqa: E402
from tests.keras_models import (MODELS, keras_predict, sample_inputs,  # noqa: E402
                                save_keras2_h5)

pytestmark = pytest.mark.tensorflow


def version(keras_models: Path, name: str) -> str:
    return os.fspath(keras_models / name / "1")


@pytest.fixture(scope="module")
def loaded(keras_models: Path) -> dict[str, Any]:
    """Each model through the plugin (``predictor: tensorflow``) and through Keras."""
    import keras

    found: dict[str, Any] = {}
    for name in MODELS:
        folder = version(keras_models, name)
        (file_name,) = os.listdir(folder)
        found[name] = (TensorFlowPredictor.from_path(folder),
                       keras.saving.load_model(os.path.join(folder, file_name), compile=False))
    return found


def assert_same(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert got[name].shape == value.shape and got[name].dtype == value.dtype, name
        np.testing.assert_allclose(got[name], value, rtol=1e-6, atol=1e-7, err_msg=name)


# --- finding the file -------------------------------------------------------------------------

def test_detected_by_the_manifest_without_tensorflow(keras_models: Path) -> None:
    for name in MODELS:
        assert detect(version(keras_models, name), {}) == 0.9
        assert detect_predictor(version(keras_models, name), {}, manifests()) == "tensorflow"


def test_a_saved_model_beside_a_keras_file_is_what_is_served(
        keras_models: Path, tfserving_models: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    (source,) = (tfserving_models / "saved_model_half_plus_two_cpu").iterdir()
    folder = tmp_path / "1"
    shutil.copytree(source, folder)
    shutil.copy(keras_models / "classifier_keras" / "1" / "model.keras", folder)
    assert detect(os.fspath(folder), {}) == 0.9
    with caplog.at_level(logging.WARNING, "flask_predict_tensorflow"):
        predictor = TensorFlowPredictor.from_path(os.fspath(folder))
    assert isinstance(predictor, TensorFlowPredictor)
    assert "Keras files beside it are ignored: ['model.keras']" in caplog.text


def test_several_keras_files_or_weights_only_are_refused(keras_models: Path,
                                                         tmp_path: Path) -> None:
    shutil.copy(keras_models / "classifier_keras" / "1" / "model.keras", tmp_path)
    shutil.copy(keras_models / "classifier_h5" / "1" / "model.h5", tmp_path)
    with pytest.raises(ConfigError, match=r"several Keras model files .*\['model.h5', "
                                          r"'model.keras'\]; keep one"):
        detect(os.fspath(tmp_path), {})
    with pytest.raises(ConfigError, match="several Keras model files"):
        TensorFlowPredictor.from_path(os.fspath(tmp_path))
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "model.weights.h5").write_bytes(b"")
    with pytest.raises(ConfigError, match="holds weights only; save the whole model"):
        keras_file(os.fspath(weights))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert detect(os.fspath(empty), {}) == 0.0 and keras_file(os.fspath(empty)) is None


def test_savedmodel_options_are_refused_for_a_keras_file(keras_models: Path) -> None:
    with pytest.raises(TypeError, match=r"\['tags'\] are for SavedModels"):
        TensorFlowPredictor.from_path(version(keras_models, "classifier_keras"), tags=["serve"])


# --- the signature ----------------------------------------------------------------------------

def test_signature_is_the_exported_saved_model_s(loaded: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """What TF Serving would show for ``model.export()`` of the same model: names, dtypes,
    shapes; and the export, served as a SavedModel, predicts the same."""
    for name, (predictor, model) in loaded.items():
        assert isinstance(predictor, KerasPredictor)
        model.export(os.fspath(tmp_path / name), verbose=False)
        exported = TensorFlowPredictor.from_path(os.fspath(tmp_path / name))
        ours, theirs = predictor.metadata().signature, exported.metadata().signature

        def specs(tensors: Any) -> list[tuple[str, str, Any]]:
            return sorted((t.name, t.datatype, t.shape) for t in tensors)

        assert specs(ours.inputs) == specs(theirs.inputs), name
        assert specs(ours.outputs) == specs(theirs.outputs), name
        inputs = sample_inputs(name)
        assert_same(predictor.predict_tensors(inputs), exported.predict_tensors(inputs))


def test_metadata_names_dtypes_and_shapes(loaded: dict[str, Any]) -> None:
    named = loaded["named_keras"][0].metadata()
    assert named.platform == "tensorflow" and list(named.signatures) == ["serving_default"]
    assert [(t.name, t.datatype, t.shape) for t in named.signature.inputs] == [
        ("age", "FP32", (-1,)), ("city", "BYTES", (-1,)), ("income", "FP32", (-1, 2)),
        ("rooms", "INT64", (-1,))]
    assert [(t.name, t.shape) for t in named.signature.outputs] == [("kind", (-1, 2)),
                                                                    ("price", (-1, 1))]
    assert named.properties["keras_file"] == "model.keras"
    h5 = loaded["named_h5"][0].metadata().signature
    assert [(t.name, t.datatype) for t in h5.inputs] == [("size", "FP32"), ("rooms", "INT32")]
    assert [t.name for t in h5.outputs] == ["output_0", "output_1"]
    classifier = loaded["classifier_h5"][0].metadata().signature
    assert [(t.name, t.shape) for t in classifier.inputs] == [("features", (-1, 4))]
    assert [(t.name, t.shape) for t in classifier.outputs] == [("output_0", (-1, 3))]


# --- predicting -------------------------------------------------------------------------------

def test_predictions_are_model_predict_s(loaded: dict[str, Any]) -> None:
    for name, (predictor, model) in loaded.items():
        for rows in (1, 5):
            inputs = sample_inputs(name, rows)
            assert_same(predictor.predict_tensors(inputs), keras_predict(model, inputs))


def test_named_instances_and_requested_outputs(loaded: dict[str, Any]) -> None:
    predictor, model = loaded["named_keras"]
    inputs = sample_inputs("named_keras", 2)
    expected = keras_predict(model, inputs)
    instances = [{"age": float(inputs["age"][i]), "income": inputs["income"][i].tolist(),
                  "rooms": int(inputs["rooms"][i]), "city": inputs["city"][i].decode()}
                 for i in range(2)]
    got = predictor.predict(instances)
    for i, row in enumerate(got):
        np.testing.assert_allclose(row["price"], expected["price"][i], rtol=1e-6)
        np.testing.assert_allclose(row["kind"], expected["kind"][i], rtol=1e-6)
    only = predictor.predict_tensors(inputs, ["price"])
    assert list(only) == ["price"]
    strings = {**inputs, "city": inputs["city"].astype(str)}  # text, not bytes
    assert_same(predictor.predict_tensors(strings), expected)


def test_bad_input_is_a_client_error(loaded: dict[str, Any]) -> None:
    predictor = loaded["named_keras"][0]
    good = sample_inputs("named_keras", 2)
    cases = [
        ({k: v for k, v in good.items() if k != "age"}, r"missing \['age'\], unknown \[\]"),
        ({**good, "colour": good["age"]}, r"unknown \['colour'\]"),
        ({**good, "income": good["income"][:, :1]},
         r"input 'income': shape \[2, 1\] does not fit the model's \[-1, 2\]"),
        ({**good, "age": np.array([b"a", b"b"], object)}, "expected float32 values, got strings"),
        ({**good, "rooms": np.array([1.5, 2.0])}, "expected int64 values, got float64"),
        ({**good, "city": np.array([1.0, 2.0])}, "input city: expected strings"),
        ({**good, "age": np.array([1e300, 1.0])}, "a value is out of range for float"),
    ]
    for inputs, message in cases:
        with pytest.raises(InvalidInput, match=message):
            predictor.predict_tensors(inputs)
    with pytest.raises(InvalidInput, match=r"unknown output\(s\) \['nope'\]"):
        predictor.predict_tensors(good, ["nope"])
    with pytest.raises(InvalidInput, match='signature name: "other" not found'):
        predictor.predict_tensors(good, None, "other")
    integers = {**good, "age": np.array([30, 40])}  # integers into a float input: no change
    assert predictor.predict_tensors(integers)["price"].shape == (2, 1)
    example = [{"age": np.array([30.0], np.float32)}]
    with pytest.raises(InvalidInput, match="No classification inputs found in SignatureDef: a "
                                           r"Keras model takes its inputs by name \(\['age'"):
        predictor.classify(example)
    with pytest.raises(InvalidInput, match="No regression inputs found in SignatureDef"):
        predictor.regress(example)


# Keras 3 warns, reading Keras 2's Embedding config, about an argument Keras 2 wrote itself
@pytest.mark.filterwarnings("ignore:Do not pass an `input_shape`:UserWarning")
def test_a_keras_2_h5_file_loads_under_keras_3(tmp_path: Path) -> None:
    inputs, expected = save_keras2_h5(tmp_path / "keras2")
    predictor = TensorFlowPredictor.from_path(os.fspath(tmp_path / "keras2" / "1"))
    signature = predictor.metadata().signature
    assert [t.name for t in signature.inputs] == ["size", "rooms"]
    assert [t.name for t in signature.outputs] == ["output_0", "output_1"]
    assert_same(predictor.predict_tensors(inputs), expected)


def test_a_subclassed_model_is_refused_with_the_way_out(tmp_path: Path) -> None:
    import keras

    @keras.saving.register_keras_serializable("flask_predict_tests")
    class Doubler(keras.Model):
        def call(self, x: Any) -> Any:
            return x * 2.0

    model = Doubler()
    model(np.zeros((1, 2), np.float32))
    (tmp_path / "1").mkdir()
    model.save(tmp_path / "1" / "model.keras")
    with pytest.raises(ConfigError, match=r"declares no inputs \(a subclassed model\?\): "
                                          "export it with model.export"):
        TensorFlowPredictor.from_path(os.fspath(tmp_path / "1"))


def test_close_releases_the_model(keras_models: Path) -> None:
    predictor = TensorFlowPredictor.from_path(version(keras_models, "classifier_keras"))
    predictor.close()
    assert not hasattr(predictor, "model")
