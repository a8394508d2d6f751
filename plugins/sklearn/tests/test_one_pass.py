"""``predict`` and ``predict_proba`` from one pass answer exactly what the model's own two
methods answer, for every estimator kind that gets one; the others keep their methods."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import joblib
import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier,
                              RandomForestClassifier)
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier, ExtraTreeClassifier

from flask_predict.types import Tensor
from flask_predict_sklearn import SklearnPredictor
from flask_predict_sklearn.onepass import _agrees, derive

WIDTH = 8


def data(classes: int, labels: Any = None) -> tuple[Tensor, Tensor]:
    x, y = make_classification(n_samples=300, n_features=WIDTH, n_informative=4,
                               n_classes=classes, random_state=classes)
    return x, (y if labels is None else np.asarray(labels)[y])


def fit(model: Any, classes: int = 2, labels: Any = None) -> Any:
    return model.fit(*data(classes, labels))


def zeroed(model: LogisticRegression) -> LogisticRegression:
    """Every score exactly 0: every answer a tie."""
    model.coef_[:] = 0.0
    model.intercept_[:] = 0.0
    return model


def nudged(model: LogisticRegression) -> LogisticRegression:
    """The last class's score 1e-20 over the others: it is ``predict``'s answer, yet every
    probability is equal (``expit`` and ``softmax`` round the difference away), so labels
    taken from the probabilities would be wrong."""
    zeroed(model).intercept_[-1] = 1e-20
    return model


class OwnProba(RandomForestClassifier):
    """A forest whose probabilities are its own: predict is not their first highest."""

    def predict_proba(self, X: Any) -> Any:  # scikit-learn's signature
        return 1.0 - super().predict_proba(X)


ONE_PASS: dict[str, Callable[[], Any]] = {
    "logistic-binary": lambda: fit(LogisticRegression(max_iter=1000)),
    "logistic-multiclass": lambda: fit(LogisticRegression(max_iter=1000), 3),
    "logistic-string-labels": lambda: fit(LogisticRegression(max_iter=1000), 3,
                                          ["ant", "bee", "cat"]),
    "logistic-binary-ties": lambda: zeroed(fit(LogisticRegression(max_iter=1000))),
    "logistic-multiclass-ties": lambda: zeroed(fit(LogisticRegression(max_iter=1000), 4)),
    "logistic-binary-nudged": lambda: nudged(fit(LogisticRegression(max_iter=1000))),
    "logistic-multiclass-nudged": lambda: nudged(fit(LogisticRegression(max_iter=1000), 3)),
    "decision-tree": lambda: fit(DecisionTreeClassifier(max_depth=3, random_state=0), 3),
    "extra-tree": lambda: fit(ExtraTreeClassifier(max_depth=3, random_state=0), 3),
    # two fully grown trees vote one class each: where they differ, a 0.5/0.5 tie
    "random-forest-ties": lambda: fit(RandomForestClassifier(n_estimators=2,
                                                             random_state=0), 3),
    "extra-trees": lambda: fit(ExtraTreesClassifier(n_estimators=4, max_depth=3,
                                                    random_state=0), 2, ["no", "yes"]),
    "pipeline-logistic": lambda: fit(make_pipeline(StandardScaler(),
                                                   LogisticRegression(max_iter=1000)), 3),
    "pipeline-forest-passthrough": lambda: fit(Pipeline([
        ("scale", StandardScaler()), ("nothing", "passthrough"),
        ("forest", RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0))])),
}

OWN_METHODS: dict[str, Callable[[], Any]] = {
    "svc-platt-scaling": lambda: fit(SVC(probability=True, random_state=0), 3),
    "calibrated-svc": lambda: fit(CalibratedClassifierCV(SVC(), ensemble=False), 3),
    "gradient-boosting": lambda: fit(GradientBoostingClassifier(n_estimators=5), 2),
    "naive-bayes": lambda: fit(GaussianNB(), 3),
    "sgd-log-loss": lambda: fit(SGDClassifier(loss="log_loss", random_state=0), 3),
    "overridden-predict-proba": lambda: fit(OwnProba(n_estimators=3, random_state=0), 3),
    "pipeline-svc": lambda: fit(make_pipeline(StandardScaler(),
                                              SVC(probability=True, random_state=0))),
}


def load(tmp_path: Path, model: Any) -> SklearnPredictor:
    joblib.dump(model, tmp_path / "model.joblib")
    return SklearnPredictor.from_path(str(tmp_path))


def rows(count: int, seed: int) -> Tensor:
    """Random rows; some exactly 0, some repeated."""
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=2.0, size=(count, WIDTH))
    x[rng.random(x.shape) < 0.1] = 0.0
    x[count // 2:] = x[:count - count // 2]
    return x


def assert_same_answers(predictor: SklearnPredictor, model: Any) -> None:
    for count, dtype in ((1, np.float64), (5, np.float64), (2000, np.float64),
                         (1, np.float32), (300, np.float32)):
        x = rows(count, count).astype(dtype)
        got = predictor.predict_tensors({"inputs": x})
        assert list(got) == ["predict", "predict_proba"]
        for name, expected in (("predict", model.predict(x)),
                               ("predict_proba", model.predict_proba(x))):
            assert got[name].dtype == expected.dtype, name
            np.testing.assert_array_equal(got[name], expected, strict=True)
        alone = predictor.predict_tensors({"inputs": x}, ["predict_proba"])
        np.testing.assert_array_equal(alone["predict_proba"], model.predict_proba(x),
                                      strict=True)


@pytest.mark.parametrize("kind", ONE_PASS)
def test_one_pass_answers_as_the_models_own_methods(tmp_path: Path, kind: str) -> None:
    model = ONE_PASS[kind]()
    predictor = load(tmp_path, model)
    assert predictor.one_pass is not None
    assert_same_answers(predictor, model)


@pytest.mark.parametrize("kind", ["logistic-binary-ties", "logistic-multiclass-ties",
                                  "logistic-binary-nudged", "logistic-multiclass-nudged",
                                  "random-forest-ties"])
def test_the_ties_are_real(kind: str) -> None:
    model = ONE_PASS[kind]()
    probabilities = model.predict_proba(rows(2000, 2000))
    top = np.sort(probabilities, axis=1)
    assert (top[:, -1] == top[:, -2]).any()


@pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning")
@pytest.mark.parametrize("kind", OWN_METHODS)
def test_other_estimators_keep_their_own_methods(tmp_path: Path, kind: str) -> None:
    model = OWN_METHODS[kind]()
    predictor = load(tmp_path, model)
    assert predictor.one_pass is None
    assert_same_answers(predictor, model)


def test_a_derivation_that_disagrees_is_not_used() -> None:
    model = ONE_PASS["logistic-binary"]()
    right = derive(model)
    assert right is not None and _agrees(model, right)

    def wrong(x: Tensor) -> tuple[Tensor, Tensor]:
        predicted, probabilities = right(x)
        return predicted[::-1].copy(), probabilities
    assert not _agrees(model, wrong)


def test_non_finite_rows_get_scikit_learns_refusal_naming_the_feature(tmp_path: Path) -> None:
    predictor = load(tmp_path, ONE_PASS["logistic-binary"]())
    x = np.zeros((2, WIDTH))
    x[1, 2] = np.nan
    with pytest.raises(Exception, match="^feature 2: value 1 is missing"):
        predictor.predict_tensors({"inputs": x})
