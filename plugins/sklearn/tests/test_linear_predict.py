"""The linear classifiers' predict path answers exactly as scikit-learn's predict."""

from __future__ import annotations

from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from flask_predict import FailedPrecondition
from flask_predict_sklearn import SklearnPredictor, is_linear_classifier


class Overridden(LogisticRegression):
    def predict(self, X):  # type: ignore[no-untyped-def]  # scikit-learn's signature
        return super().predict(X) * 0


def load(tmp_path: Path, model: object) -> SklearnPredictor:
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    joblib.dump(model, folder / "model.joblib")
    return SklearnPredictor.from_path(str(folder))


def binary() -> LogisticRegression:
    x, y = make_classification(n_samples=300, n_features=20, random_state=0)
    return LogisticRegression(max_iter=1000).fit(x, y)


def labelled() -> LogisticRegression:
    x, y = load_iris(return_X_y=True)
    return LogisticRegression(max_iter=1000).fit(x, np.array(["setosa", "versicolor",
                                                              "virginica"])[y])


@pytest.mark.parametrize("make", [
    binary,
    lambda: LogisticRegression(max_iter=1000).fit(*load_iris(return_X_y=True)),
    labelled,
    lambda: SGDClassifier(random_state=0).fit(*load_iris(return_X_y=True)),
], ids=["binary", "multiclass", "string-labels", "sgd"])
def test_same_answers_as_scikit_learn(tmp_path: Path, make: object) -> None:
    model = make()  # type: ignore[operator]
    predictor = load(tmp_path, model)
    assert predictor.linear
    width = model.coef_.shape[1]
    rng = np.random.default_rng(0)
    for rows, dtype in ((1, np.float64), (7, np.float64), (1000, np.float64),
                        (1, np.float32), (500, np.float32)):
        x = rng.normal(scale=3.0, size=(rows, width)).astype(dtype)
        got = predictor.predict_tensors({"inputs": x})["predict"]
        expected = model.predict(x)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    # on the decision boundary (score exactly 0) both say the negative class
    zero = np.zeros((1, width))
    if model.intercept_.shape == (1,) and model.intercept_[0] == 0.0:
        np.testing.assert_array_equal(predictor.predict_tensors({"inputs": zero})["predict"],
                                      model.predict(zero))


def test_instances_door_keeps_labels(tmp_path: Path) -> None:
    predictor = load(tmp_path, labelled())
    assert predictor.predict([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]) == [
        "setosa", "virginica"]


@pytest.mark.parametrize("bad, said", [(np.nan, "is missing (null or NaN)"),
                                        (np.inf, "is infinite")])
def test_non_finite_values_scikit_learn_refuses_name_the_feature(tmp_path: Path, bad: float,
                                                                 said: str) -> None:
    """scikit-learn's refusal (several lines of advice) as one line naming where it is."""
    predictor = load(tmp_path, binary())
    x = np.zeros((2, 20))
    x[1, 3] = bad
    with pytest.raises(FailedPrecondition) as caught:
        predictor.predict_tensors({"inputs": x})
    assert caught.value.message.startswith(f"feature 3: value 1 {said}")
    assert "\n" not in caught.value.message


def test_other_models_keep_scikit_learns_predict(tmp_path: Path) -> None:
    x, y = load_iris(return_X_y=True)
    assert not is_linear_classifier(make_pipeline(StandardScaler(), LogisticRegression())
                                    .fit(x, y))
    overridden = Overridden(max_iter=1000).fit(x, y)
    assert not is_linear_classifier(overridden)
    predictor = load(tmp_path, overridden)
    assert not predictor.linear
    assert predictor.predict_tensors({"inputs": x[:3]})["predict"].tolist() == [0, 0, 0]
