"""XGBoost models trained with named features and categorical columns: one input per
feature, categories sent as their values, answered as XGBoost answers the DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from flask_predict import FailedPrecondition, InvalidInput
from flask_predict_xgboost import XGBoostPredictor

RNG = np.random.default_rng(0)
N = 400
COLORS = ["red", "blue", "green", "Tokyo"]  # the training order is not the sorted order
SHOPS = pd.DataFrame({
    "color": pd.Categorical(RNG.choice(COLORS, N), categories=COLORS),
    "size": RNG.normal(size=N),
    "grade": pd.Categorical(RNG.choice([3, 7, 11], N), categories=[11, 3, 7]),
})
SHOPS.loc[::11, "size"] = np.nan
SOLD = ((SHOPS.color == "red") | (SHOPS["size"] > 0.5) | (SHOPS.grade == 7)).astype(int)
SENT = pd.DataFrame({
    "color": pd.Categorical(["red", "Tokyo", "green", None], categories=COLORS),
    "size": [0.1, np.nan, 0.9, -1.0],
    "grade": pd.Categorical([3, 11, 7, 3], categories=[11, 3, 7])})


def text(values: Any) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else str(v).encode() for v in values]
    return out


SENT_COLUMNS = {"color": text(["red", "Tokyo", "green", None]),
                "size": np.array([0.1, np.nan, 0.9, -1.0]),
                "grade": np.array([3.0, 11.0, 7.0, 3.0])}


@pytest.fixture(scope="module")
def classifier() -> xgb.XGBClassifier:
    return xgb.XGBClassifier(n_estimators=12, max_depth=3, enable_categorical=True,
                             tree_method="hist", max_cat_to_onehot=1).fit(SHOPS, SOLD)


@pytest.mark.parametrize("name", ["model.json", "model.ubj", "model.joblib"])
def test_categories_sent_by_value_answer_as_xgboost_answers_the_frame(
        tmp_path: Path, classifier: xgb.XGBClassifier, name: str) -> None:
    if name.endswith(".joblib"):
        joblib.dump(classifier, tmp_path / name)
    else:
        classifier.save_model(tmp_path / name)
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    meta = predictor.metadata()
    assert meta.signature.tabular
    assert [(s.name, s.datatype, s.shape) for s in meta.signature.inputs] == [
        ("color", "BYTES", (-1,)), ("size", "FP32", (-1,)), ("grade", "FP32", (-1,))]
    assert meta.properties["categories"] == {"color": COLORS, "grade": [11, 3, 7]}
    assert meta.properties["feature_types"] == ["c", "float", "c"]
    out = predictor.predict_tensors(SENT_COLUMNS)
    expected = classifier.predict_proba(SENT)
    if name.endswith(".joblib"):  # the wrapper's own answers
        np.testing.assert_array_equal(out["predict_proba"], expected)
        assert out["predict"].tolist() == classifier.predict(SENT).tolist()
    else:  # a native file loads as a Booster: its one output is the probability
        np.testing.assert_array_equal(out["predict"], expected[:, 1])


def test_the_native_api_and_the_instances_door(tmp_path: Path) -> None:
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3},
                        xgb.DMatrix(SHOPS, SOLD, enable_categorical=True), num_boost_round=8)
    booster.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    expected = booster.inplace_predict(SENT).tolist()
    objects = [{"color": c, "size": None if np.isnan(s) else s, "grade": g}
               for c, s, g in zip(["red", "Tokyo", "green", None], SENT["size"], [3, 11, 7, 3])]
    assert predictor.predict(objects) == pytest.approx(expected, rel=0, abs=0)
    rows = [[obj["color"], obj["size"], obj["grade"]] for obj in objects]
    assert predictor.predict(rows) == predictor.predict(objects)


@pytest.mark.parametrize(("change", "message"), [
    ({"color": text(["red", "purple", "red", "red"])},
     "column 'color': unknown category \"purple\"; the model knows ['red', 'blue', 'green', "
     "'Tokyo']"),
    ({"grade": np.array([3.0, 5.0, 7.0, 3.0])}, "column 'grade': unknown category 5.0"),
    ({"color": np.array([1.0, 2.0, 3.0, 4.0])}, "column 'color': expected text, got numbers"),
    ({"size": text(["1", "2", "3", "4"])}, "column 'size': expected numbers, got text"),
    ({"weight": np.ones(4)}, "unknown input(s) ['weight']"),
])
def test_a_wrong_column_is_the_clients_error(tmp_path: Path, classifier: xgb.XGBClassifier,
                                             change: dict[str, Any], message: str) -> None:
    """XGBoost 3.3 and later refuse an unknown category themselves; so does the server."""
    classifier.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    with pytest.raises(InvalidInput) as caught:
        predictor.predict_tensors({**SENT_COLUMNS, **change})
    assert message in caught.value.message


def test_named_numbers_take_columns_rows_or_one_matrix(tmp_path: Path) -> None:
    frame = pd.DataFrame({"width": RNG.normal(size=N), "height": RNG.normal(size=N)})
    frame.loc[::5, "width"] = np.nan
    model = xgb.XGBRegressor(n_estimators=10).fit(frame, frame.height * 2)
    model.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    assert [s.name for s in predictor.metadata().signature.inputs] == ["width", "height"]
    sent = frame[:5]
    expected = model.predict(sent)
    by_column = predictor.predict_tensors({"width": sent.width.to_numpy(),
                                           "height": sent.height.to_numpy()})["predict"]
    as_matrix = predictor.predict_tensors({"inputs": sent.to_numpy()})["predict"]
    np.testing.assert_array_equal(by_column, expected)
    np.testing.assert_array_equal(as_matrix, expected)
    with pytest.raises(FailedPrecondition, match="^column 'width': value 0 is infinite"):
        predictor.predict_tensors({"width": np.array([np.inf]), "height": np.array([1.0])})
    with pytest.raises(FailedPrecondition, match="^column 'height': value 0 is infinite"):
        predictor.predict_tensors({"inputs": np.array([[1.0, np.inf]])})


def test_categories_saved_without_names_take_their_codes(tmp_path: Path) -> None:
    """A model that kept no categories (data given as codes) takes the codes as numbers."""
    codes = np.column_stack([RNG.integers(0, 3, N), RNG.normal(size=N)])
    matrix = xgb.DMatrix(codes, (codes[:, 0] == 1).astype(int), feature_names=["shop", "x"],
                         feature_types=["c", "q"], enable_categorical=True)
    booster = xgb.train({"objective": "binary:logistic"}, matrix, num_boost_round=4)
    booster.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    assert [s.datatype for s in predictor.metadata().signature.inputs] == ["FP32", "FP32"]
    out = predictor.predict_tensors({"shop": np.array([1.0, 2.0]), "x": np.array([0.0, 0.0])})
    np.testing.assert_array_equal(out["predict"],
                                  booster.inplace_predict(np.array([[1.0, 0.0], [2.0, 0.0]])))


def test_a_model_without_names_keeps_one_input(tmp_path: Path) -> None:
    booster = xgb.train({"objective": "reg:squarederror"},
                        xgb.DMatrix(RNG.normal(size=(50, 3)), RNG.normal(size=50)), 2)
    booster.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    assert predictor.layout is None
    assert [(s.name, s.shape) for s in predictor.metadata().signature.inputs] == [
        ("inputs", (-1, 3))]


def test_text_other_than_ascii_is_read_where_xgboost_saved_it_whole(tmp_path: Path) -> None:
    """Before 3.4, XGBoost saved such names cut short: the feature takes its codes then."""
    colors = ["grün", "東京", "red"]
    frame = pd.DataFrame({"color": pd.Categorical(RNG.choice(colors, N), categories=colors),
                          "x": RNG.normal(size=N)})
    model = xgb.XGBClassifier(n_estimators=4, enable_categorical=True).fit(
        frame, (frame.color == "東京").astype(int))
    model.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    sent = pd.DataFrame({"color": pd.Categorical(["東京", "grün"], categories=colors),
                         "x": [0.0, 0.0]})
    expected = model.predict_proba(sent)[:, 1]
    if tuple(int(p) for p in xgb.__version__.split(".")[:2]) >= (3, 4):
        out = predictor.predict_tensors({"color": text(["東京", "grün"]), "x": np.zeros(2)})
    else:
        assert predictor.metadata().signature.inputs[0].datatype == "FP32"
        out = predictor.predict_tensors({"color": np.array([1.0, 0.0]), "x": np.zeros(2)})
    np.testing.assert_array_equal(out["predict"], expected)
