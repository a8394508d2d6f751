"""XGBoost's explanations: for every row, the attributions are XGBoost's own TreeSHAP
contributions (``pred_contribs=True``), the baseline its bias, and together they add up to
the margin XGBoost predicts (``output_margin=True``): regression, binary and multiclass,
with missing values, by column name and category for a model fitted on a DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from flask_predict import FailedPrecondition
from flask_predict.codecs import explanation_rows
from flask_predict_xgboost import XGBoostPredictor
from tests.explained import assert_explains, rows_of

RNG = np.random.default_rng(3)
X = RNG.normal(size=(240, 4))
X[RNG.random(X.shape) < 0.15] = np.nan
ROWS = X[:12]
"""Rows explained: some with missing values."""


def _save(model: Any, folder: Path, how: str) -> str:
    (folder / "1").mkdir(parents=True)
    if how == "joblib":
        import joblib

        joblib.dump(model, folder / "1" / "model.joblib")
    else:
        model.save_model(folder / "1" / "model.json")
    return str(folder / "1")


def _regression(folder: Path) -> str:
    target = np.nan_to_num(X[:, 0]) * 3 - np.nan_to_num(X[:, 2])
    return _save(xgb.XGBRegressor(n_estimators=30, max_depth=3).fit(X, target), folder, "json")


def _binary(folder: Path) -> str:
    label = (np.nan_to_num(X[:, 1]) > 0).astype(int)
    return _save(xgb.XGBClassifier(n_estimators=20, max_depth=3).fit(X, label), folder,
                 "joblib")


def _multiclass(folder: Path) -> str:
    label = RNG.integers(0, 3, len(X))
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
                        xgb.DMatrix(X, label=label), num_boost_round=10)
    return _save(booster, folder, "json")


TRAINERS = {"regression": _regression, "binary": _binary, "multiclass": _multiclass}


@pytest.fixture(scope="module", params=sorted(TRAINERS))
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[str, XGBoostPredictor]:
    folder = TRAINERS[request.param](tmp_path_factory.mktemp(request.param))
    return request.param, XGBoostPredictor.from_path(folder)


def test_attributions_are_xgboosts_own_and_add_up_to_the_margin(
        trained: tuple[str, XGBoostPredictor]) -> None:
    kind, predictor = trained
    explanation = predictor.explain({"inputs": ROWS.astype(np.float32)})
    rows = rows_of(explanation_rows(explanation))
    matrix = xgb.DMatrix(ROWS, missing=np.nan)
    own = predictor.booster.predict(matrix, pred_contribs=True, strict_shape=True)
    margin = predictor.booster.predict(matrix, output_margin=True, strict_shape=True)
    assert len(rows) == len(ROWS) and len(rows[0]) == (3 if kind == "multiclass" else 1)
    assert_explains(rows, own, margin, None, "margin")


def test_the_classes_explained_are_named(trained: tuple[str, XGBoostPredictor]) -> None:
    kind, predictor = trained
    first = explanation_rows(predictor.explain({"inputs": ROWS[:1].astype(np.float32)}))[0]
    names = [a.get("outputDisplayName") for a in first["attributions"]]
    # a binary classifier's margin is the log-odds of its positive class; a Booster has no
    # class names, only each output's index
    assert names == {"regression": [None], "binary": ["1"], "multiclass": [None] * 3}[kind]


def test_instances_are_explained_as_predict_reads_them(
        trained: tuple[str, XGBoostPredictor]) -> None:
    _, predictor = trained
    instances = [[None, 1.0, 2.0, 3.0]]
    by_instances = predictor.explain_instances(instances)
    by_tensor = predictor.explain({"inputs": np.array([[np.nan, 1, 2, 3]], np.float32)})
    assert explanation_rows(by_instances) == explanation_rows(by_tensor)


def test_infinity_is_refused(trained: tuple[str, XGBoostPredictor]) -> None:
    with pytest.raises(FailedPrecondition, match="inf"):
        trained[1].explain({"inputs": np.array([[np.inf, 0, 0, 0]], np.float32)})


def test_columns_and_categories_by_name(tmp_path: Path) -> None:
    colors = ["red", "blue", "green"]
    data = pd.DataFrame({"color": pd.Categorical(RNG.choice(colors, 200), categories=colors),
                         "size": RNG.normal(1, 1, 200)})
    data.loc[::7, "size"] = np.nan
    sold = ((data.color == "red") | (data["size"] > 1.2)).astype(int)
    model = xgb.XGBClassifier(n_estimators=8, max_depth=3, enable_categorical=True,
                              tree_method="hist").fit(data, sold)
    predictor = XGBoostPredictor.from_path(_save(model, tmp_path, "json"))
    sent = {"color": np.array(["red", None, "green"], dtype=object),
            "size": np.array([0.25, 1.5, np.nan])}
    rows = rows_of(explanation_rows(predictor.explain(sent)))
    asked = pd.DataFrame({"color": pd.Categorical(["red", None, "green"], categories=colors),
                          "size": [0.25, 1.5, np.nan]})
    booster = model.get_booster()
    matrix = xgb.DMatrix(asked, enable_categorical=True)
    own = booster.predict(matrix, pred_contribs=True)
    margin = booster.predict(matrix, output_margin=True)
    assert_explains(rows, own, margin, ["color", "size"], "margin")
