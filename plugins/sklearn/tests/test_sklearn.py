"""The scikit-learn plugin on real estimators trained here."""

from __future__ import annotations

from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from flask_predict import FailedPrecondition, InvalidInput
from flask_predict_sklearn import SklearnPredictor

X, Y = load_iris(return_X_y=True)


def save(folder: Path, model: object, name: str = "model.joblib") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    if name.endswith(".joblib"):
        joblib.dump(model, folder / name)
    else:
        import pickle

        (folder / name).write_bytes(pickle.dumps(model))
    return str(folder)


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory) -> SklearnPredictor:
    folder = tmp_path_factory.mktemp("iris")
    return SklearnPredictor.from_path(save(folder, LogisticRegression(max_iter=1000).fit(X, Y)))


def test_instances_door_answers_integer_labels(iris: SklearnPredictor) -> None:
    assert iris.predict([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]) == [0, 2]


def test_tensor_door_has_labels_and_probabilities(iris: SklearnPredictor) -> None:
    out = iris.predict_tensors({"inputs": X[:3]})
    assert out["predict"].tolist() == [0, 0, 0]
    assert out["predict_proba"].shape == (3, 3)
    assert np.allclose(out["predict_proba"].sum(axis=1), 1.0)


def test_metadata_from_the_model(iris: SklearnPredictor) -> None:
    meta = iris.metadata()
    assert meta.platform == "sklearn"
    assert meta.properties["n_features"] == 4 and meta.properties["classes"] == [0, 1, 2]
    (inputs,) = meta.signature.inputs
    assert (inputs.datatype, inputs.shape) == ("FP64", (-1, 4))
    assert [(o.name, o.datatype, o.shape) for o in meta.signature.outputs] == [
        ("predict", "INT64", (-1,)), ("predict_proba", "FP64", (-1, 3))]


def test_wrong_width_and_nan_are_client_errors(iris: SklearnPredictor) -> None:
    with pytest.raises(InvalidInput, match=r"expected shape \[-1, 4\], got \[1, 3\]"):
        iris.predict([[1.0, 2.0, 3.0]])
    with pytest.raises(FailedPrecondition, match=r"^feature 3: value 0 is missing \(null or NaN\)"):
        iris.predict([[1.0, 2.0, 3.0, float("nan")]])


def test_nan_aware_models_answer(tmp_path: Path) -> None:
    x = X.copy()
    x[::7, 0] = np.nan
    model = HistGradientBoostingClassifier(max_iter=20).fit(x, Y)
    predictor = SklearnPredictor.from_path(save(tmp_path, model))
    assert len(predictor.predict([[float("nan"), 3.0, 1.4, 0.2]])) == 1


def test_pickle_pipeline_and_regressor(tmp_path: Path) -> None:
    pipeline = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, Y)
    predictor = SklearnPredictor.from_path(save(tmp_path / "p", pipeline, "model.pkl"))
    assert predictor.predict([list(X[100])]) == [2]
    regressor = LinearRegression().fit(X[:, :3], X[:, 3])
    reg = SklearnPredictor.from_path(save(tmp_path / "r", regressor))
    assert reg.metadata().signature.outputs[0].name == "predict"
    assert [o.name for o in reg.metadata().signature.outputs] == ["predict"]
    assert isinstance(reg.predict([[5.1, 3.5, 1.4]])[0], float)


def test_string_labels(tmp_path: Path) -> None:
    names = np.array(["setosa", "versicolor", "virginica"])[Y]
    predictor = SklearnPredictor.from_path(save(tmp_path, LogisticRegression(max_iter=1000)
                                                .fit(X, names)))
    assert predictor.predict([list(X[0])]) == ["setosa"]
    assert predictor.metadata().signature.outputs[0].datatype == "BYTES"


def test_default_outputs_option(tmp_path: Path) -> None:
    folder = save(tmp_path, LogisticRegression(max_iter=1000).fit(X, Y))
    predictor = SklearnPredictor.from_path(folder, outputs=["predict_proba"])
    assert list(predictor.predict_tensors({"x": X[:1]})) == ["predict_proba"]
    with pytest.raises(TypeError, match="unknown output"):
        SklearnPredictor.from_path(folder, outputs=["decision"])
    with pytest.raises(TypeError, match="unknown scikit-learn option"):
        SklearnPredictor.from_path(folder, colour="red")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model.joblib or model.pkl"):
        SklearnPredictor.from_path(str(tmp_path))
