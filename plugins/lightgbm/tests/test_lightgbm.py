"""The LightGBM plugin on real models trained here: answers equal to LightGBM's own, NaN and
null as missing, categories by value, named columns, threads per worker."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import joblib
import lightgbm as lgb
import numpy as np
import pytest

from flask_predict import InvalidInput
from flask_predict.models.plugins import detect_predictor, manifests
from flask_predict_lightgbm import LightGBMPredictor
from flask_predict_lightgbm.predictor import SINGLE_ROWS
from tests.gbm_models import COLORS, GRADES, ROWS, TIERS, frame, table, train_lightgbm


def text(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else str(v).encode() for v in values]
    return out


def columns(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    return {"color": text([row["color"] for row in rows]),
            "size": np.array([np.nan if row["size"] is None else row["size"] for row in rows]),
            "grade": np.array([float(row["grade"]) for row in rows])}


MANY = ROWS * 5  # past SINGLE_ROWS: Booster.predict on the worker's threads
assert len(MANY) > SINGLE_ROWS


@pytest.mark.parametrize("target", ["price", "sold", "tier"])
@pytest.mark.parametrize("fmt", ["txt", "bst", "joblib"])
def test_answers_equal_lightgbms_own(tmp_path: Path, target: str, fmt: str) -> None:
    fitted = train_lightgbm(tmp_path, target, fmt)
    assert detect_predictor(str(tmp_path / "1"), {}, manifests()) == "lightgbm"
    predictor = LightGBMPredictor.from_path(str(tmp_path / "1"))
    meta = predictor.metadata()
    assert meta.platform == "lightgbm" and meta.signature.tabular
    assert [(s.name, s.datatype) for s in meta.signature.inputs] == [
        ("color", "BYTES"), ("size", "FP64"), ("grade", "FP64")]
    assert meta.properties["categories"] == {"color": COLORS, "grade": GRADES}
    for rows in (ROWS, ROWS[:1], MANY):
        out = predictor.predict_tensors(columns(rows))
        data = frame(rows)
        if fmt != "joblib":  # a text file loads as a Booster: its own output
            np.testing.assert_array_equal(out["predict"], fitted.booster_.predict(data))
        elif target == "price":
            np.testing.assert_array_equal(out["predict"], fitted.predict(data))
        else:
            assert out["predict"].tolist() == fitted.predict(data).tolist()
            np.testing.assert_array_equal(out["predict_proba"], fitted.predict_proba(data))
    if fmt == "joblib" and target == "tier":
        assert meta.properties["classes"] == sorted(TIERS)
        assert predictor.predict(ROWS) == fitted.predict(frame(ROWS)).tolist()


def test_nan_and_null_are_missing_and_an_unknown_category_too(tmp_path: Path) -> None:
    fitted = train_lightgbm(tmp_path, "price")
    predictor = LightGBMPredictor.from_path(str(tmp_path / "1"))
    missing = predictor.predict([{"color": None, "size": None, "grade": 3}])
    nan = predictor.predict([{"color": "purple", "size": math.nan, "grade": 3}])
    zero = predictor.predict([{"color": None, "size": 0.0, "grade": 3}])
    assert missing == nan != zero
    expected = fitted.booster_.predict(frame([{"color": None, "size": None, "grade": 3}]))
    assert missing == expected.tolist()


@pytest.mark.parametrize(("change", "message"), [
    ({"color": np.array([1.0, 2.0, 3.0, 4.0])}, "column 'color': expected text, got numbers"),
    ({"size": text(["1", "2", "3", "4"])}, "column 'size': expected numbers, got text"),
    ({"weight": np.ones(4)}, "unknown input(s) ['weight']"),
])
def test_a_wrong_column_is_the_clients_error(tmp_path: Path, change: dict[str, Any],
                                             message: str) -> None:
    train_lightgbm(tmp_path, "sold")
    predictor = LightGBMPredictor.from_path(str(tmp_path / "1"))
    with pytest.raises(InvalidInput) as caught:
        predictor.predict_tensors({**columns(ROWS), **change})
    assert message in caught.value.message


def test_a_matrix_model_takes_one_input_and_checks_its_width(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4))
    x[::7, 1] = np.nan
    booster = lgb.train({"objective": "multiclass", "num_class": 3, "verbose": -1,
                         "num_threads": 1}, lgb.Dataset(x, (x[:, 0] > 0) + (x[:, 2] > 1)),
                        num_boost_round=10)
    booster.save_model(tmp_path / "model.txt")
    predictor = LightGBMPredictor.from_path(str(tmp_path))
    meta = predictor.metadata()
    assert [(s.name, s.shape) for s in meta.signature.inputs] == [("inputs", (-1, 4))]
    assert [(s.name, s.shape) for s in meta.signature.outputs] == [("predict", (-1, 3))]
    sent = np.vstack([x[:12], [[np.inf, np.nan, -np.inf, 0.0]]])
    for rows in (sent[:1], sent):
        np.testing.assert_array_equal(predictor.predict_tensors({"x": rows})["predict"],
                                      booster.predict(rows))
    for row in ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0, 5.0]):
        with pytest.raises(InvalidInput, match=r"expected shape \[-1, 4\]"):
            predictor.predict([row])


def test_a_wrong_object_in_a_pickle(tmp_path: Path) -> None:
    joblib.dump({"not": "a model"}, tmp_path / "model.joblib")
    with pytest.raises(TypeError, match="not a LightGBM model"):
        LightGBMPredictor.from_path(str(tmp_path))


def test_after_fork_takes_the_workers_thread_count(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded in the gunicorn master (one thread), then set to each worker's share."""
    train_lightgbm(tmp_path, "sold")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    predictor = LightGBMPredictor.from_path(str(tmp_path / "1"))
    assert predictor.threads == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    predictor.after_fork()
    assert predictor.threads == 3
    pinned = LightGBMPredictor.from_path(str(tmp_path / "1"), num_threads=2)
    pinned.after_fork()
    assert pinned.threads == 2


def test_an_xgboost_model_bst_stays_xgboosts(tmp_path: Path) -> None:
    from tests.models import train_xgboost_missing

    base = train_xgboost_missing(tmp_path / "m", fmt="bst")
    assert detect_predictor(str(base / "1"), {}, manifests()) == "xgboost"
    shops, _ = table()
    assert len(shops) > 0
