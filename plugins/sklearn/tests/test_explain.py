"""Linear scikit-learn models explained: each feature's attribution is its coefficient
times its distance from the baseline, and the baseline output plus the attributions is the
model's own raw output (``decision_function`` for a classifier, ``predict`` for a
regressor), for every row. The baseline is the row saved beside the model, else zero where
the linear step reads (a StandardScaler's training mean); a DataFrame pipeline is explained
by column, a one-hot column as the sum of its indicators. Other models are refused, by
name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression, PoissonRegressor, Ridge
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from flask_predict import FailedPrecondition
from flask_predict.codecs import explanation_rows
from flask_predict_sklearn import SklearnPredictor
from tests.explained import assert_additive, rows_of

X, Y = load_iris(return_X_y=True)
ROWS = X[::15]


def _serve(model: Any, folder: Path, baseline: Any = None) -> SklearnPredictor:
    (folder / "1").mkdir(parents=True)
    joblib.dump(model, folder / "1" / "model.joblib")
    if baseline is not None:
        (folder / "1" / "explanation_baseline.json").write_text(json.dumps(baseline))
    return SklearnPredictor.from_path(str(folder / "1"))


def _explained(predictor: SklearnPredictor, rows: Any) -> list[list[dict[str, Any]]]:
    return rows_of(explanation_rows(predictor.explain({"inputs": rows})))


def _check(rows: list[list[dict[str, Any]]], raw: Any, coef: Any, distance: Any) -> None:
    """Every row's attributions are ``coef * distance`` and add up to *raw*."""
    raw = np.asarray(raw).reshape(len(rows), -1)
    coef = np.atleast_2d(coef)
    for row, attributions in enumerate(rows):
        assert len(attributions) == raw.shape[1]
        for k, attribution in enumerate(attributions):
            got = np.ravel(list(attribution["featureAttributions"].values()))
            np.testing.assert_allclose(got, coef[k] * distance[row], rtol=1e-12, atol=1e-12)
            assert_additive(attribution, float(raw[row, k]))


def test_multiclass_logistic_regression_from_zero(tmp_path: Path) -> None:
    model = LogisticRegression(max_iter=1000).fit(X, Y)
    rows = _explained(_serve(model, tmp_path), ROWS)
    _check(rows, model.decision_function(ROWS), model.coef_, ROWS)
    assert [a["outputDisplayName"] for a in rows[0]] == ["0", "1", "2"]
    assert {a["outputName"] for a in rows[0]} == {"decision_function"}
    np.testing.assert_allclose([a["baselineOutputValue"] for a in rows[0]], model.intercept_)


def test_binary_classifier_explains_the_positive_class_from_the_training_mean(
        tmp_path: Path) -> None:
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, Y == 2)
    scaler, linear = model.steps[0][1], model.steps[1][1]
    rows = _explained(_serve(model, tmp_path), ROWS)
    # the scaler's mean is the training mean: the distance is taken in its scaled space
    _check(rows, model.decision_function(ROWS), linear.coef_,
           (ROWS - scaler.mean_) / scaler.scale_)
    assert rows[0][0]["outputDisplayName"] == "True" and "outputIndex" not in rows[0][0]
    assert rows[0][0]["baselineOutputValue"] == pytest.approx(linear.intercept_[0], rel=1e-12)


def test_regressor_from_a_baseline_saved_beside_it(tmp_path: Path) -> None:
    model = Ridge().fit(X[:, 1:], X[:, 0])
    mean = X[:, 1:].mean(axis=0)
    rows = _explained(_serve(model, tmp_path, mean.tolist()), ROWS[:, 1:])
    _check(rows, model.predict(ROWS[:, 1:]), model.coef_, ROWS[:, 1:] - mean)
    assert rows[0][0]["outputName"] == "predict" and "outputDisplayName" not in rows[0][0]
    assert rows[0][0]["baselineOutputValue"] == pytest.approx(model.predict([mean])[0])


def test_columns_by_name_with_a_baseline_by_name(tmp_path: Path) -> None:
    data = pd.DataFrame(X[:, :3], columns=["sepal_length", "sepal_width", "petal_length"])
    model = LinearRegression().fit(data, X[:, 3])
    baseline = {"petal_length": 4.0, "sepal_length": 6.0, "sepal_width": 3.0}
    predictor = _serve(model, tmp_path, baseline)
    sent = {name: data[name].to_numpy()[:5] for name in data.columns}
    rows = rows_of(explanation_rows(predictor.explain(sent)))
    distance = data.to_numpy()[:5] - [6.0, 3.0, 4.0]
    _check(rows, model.predict(data[:5]), model.coef_, distance)
    assert list(rows[0][0]["featureAttributions"]) == list(data.columns)


def test_a_dataframe_pipeline_by_column_with_one_hot_categories(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    cities = rng.choice(["Paris", "London", "Rome"], 120)
    data = pd.DataFrame({"age": rng.normal(40, 10, 120), "city": cities,
                         "income": rng.normal(50, 15, 120)})
    data.loc[::9, "income"] = np.nan
    churned = (data.age > 40) ^ (cities == "Rome")
    columns = ColumnTransformer([
        ("numbers", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "income"]),
        ("city", OneHotEncoder(handle_unknown="ignore"), ["city"])])
    model = make_pipeline(columns, LogisticRegression()).fit(data, churned)
    predictor = _serve(model, tmp_path)
    sent = {"age": np.array([30.0, 55.0]), "city": np.array(["Rome", "Oslo"], dtype=object),
            "income": np.array([np.nan, 70.0])}
    rows = rows_of(explanation_rows(predictor.explain(sent)))
    asked = pd.DataFrame(sent)
    z = model[0].transform(asked)
    coef = model[-1].coef_[0]
    raw = model.decision_function(asked)
    for row, (attribution,) in enumerate(rows):
        by_column = attribution["featureAttributions"]
        assert list(by_column) == ["age", "city", "income"]
        # zero where the linear step reads: the training mean of a scaled number (the
        # imputed missing income is at it), none of the cities for the one-hot city
        assert by_column["age"] == pytest.approx(coef[0] * z[row, 0], rel=1e-12)
        assert by_column["income"] == pytest.approx(coef[1] * z[row, 1], rel=1e-12, abs=1e-12)
        assert by_column["city"] == pytest.approx(float(coef[2:] @ z[row, 2:]), abs=1e-12)
        assert attribution["baselineOutputValue"] == pytest.approx(model[-1].intercept_[0])
        assert_additive(attribution, float(raw[row]))
    assert rows[1][0]["featureAttributions"]["city"] == 0.0  # an unknown city: no indicator


@pytest.mark.parametrize("model, why", [
    (RandomForestClassifier(n_estimators=3, random_state=0), "RandomForestClassifier"),
    (PoissonRegressor(), "PoissonRegressor (its output is not linear"),
    (make_pipeline(PCA(2), LogisticRegression()), "a Pipeline with a PCA step"),
])
def test_other_models_are_refused_by_name(tmp_path: Path, model: Any, why: str) -> None:
    target = Y if hasattr(model, "predict_proba") else X[:, 0]
    predictor = _serve(model.fit(X, target), tmp_path)
    with pytest.raises(FailedPrecondition, match="cannot explain") as refused:
        predictor.explain({"inputs": ROWS})
    assert why in refused.value.message and "linear scikit-learn models" in refused.value.message


def test_missing_values_are_refused(tmp_path: Path) -> None:
    predictor = _serve(LogisticRegression(max_iter=1000).fit(X, Y), tmp_path)
    with pytest.raises(FailedPrecondition, match="Explanation failed: .*missing"):
        predictor.explain({"inputs": np.array([[np.nan, 1.0, 1.0, 1.0]])})


def test_a_wrong_baseline_file_stops_the_load(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="4 finite numbers"):
        _serve(LogisticRegression(max_iter=1000).fit(X, Y), tmp_path, [1.0, 2.0])
