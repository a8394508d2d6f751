"""One XGBoost call per request answers exactly what XGBoost's own methods answer.

XGBoost's own path is the reference: ``Booster.inplace_predict`` for :class:`DensePredict`
and for the small-batch walk (:mod:`flask_predict_xgboost.small`), the scikit-learn wrapper's ``predict``/``predict_proba`` for the predictor's outputs; random
rows with missing values (NaN), and models whose answers tie.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import joblib
import numpy as np
import pytest
import xgboost as xgb

from flask_predict.types import Tensor
from flask_predict_xgboost import XGBoostPredictor
from flask_predict_xgboost.dense import DensePredict
from flask_predict_xgboost.small import (TRANSFORMS, SmallBatchPredict, fastest,
                                         small_batch_predict)

FEATURES = 6


def rows(count: int, seed: int = 0, missing: float = 0.2) -> Tensor:
    """Random float32 rows, a share of them NaN, some exactly 0."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, FEATURES)).astype(np.float32)
    x[rng.random(x.shape) < missing] = np.nan
    x[rng.random(x.shape) < 0.05] = 0.0
    return x


def training(objective: str, seed: int = 1) -> tuple[Tensor, Tensor]:
    x = rows(600, seed)
    signal = np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1]) * 0.5
    if objective.startswith("multi"):
        return x, np.digitize(signal, [-0.5, 0.5]).astype(float)
    if objective.startswith(("binary", "reg:logistic")):
        return x, (signal > 0).astype(float)
    if objective.startswith("count"):
        return x, np.round(np.exp(signal / 2))
    return x, signal


def assert_same(got: Tensor, expected: Tensor) -> None:
    """Same dtype, shape and bits (NaN where NaN)."""
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected, strict=True)


OBJECTIVES = ["binary:logistic", "binary:logitraw", "reg:squarederror", "reg:logistic",
              "count:poisson", "multi:softprob", "multi:softmax"]


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_dense_predict_is_xgboosts_inplace_predict(objective: str) -> None:
    x, y = training(objective)
    params = {"objective": objective, "max_depth": 4, "nthread": 1}
    if objective.startswith("multi"):
        params["num_class"] = 3
    booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=20)
    for count in (1, 7, 500):
        data = rows(count, seed=count)
        for margin in (False, True):
            kind = "margin" if margin else "value"
            assert_same(DensePredict(booster, margin=margin)(data),
                        booster.inplace_predict(data, missing=np.nan, predict_type=kind))
        assert_same(DensePredict(booster, iteration_range=(2, 9))(data),
                    booster.inplace_predict(data, iteration_range=(2, 9)))
    # another missing-value sentinel: 0 is missing, NaN too
    data = rows(50, seed=9)
    assert_same(DensePredict(booster, missing=0.0)(data),
                booster.inplace_predict(data, missing=0.0))


def test_dense_predict_refuses_what_it_would_misread() -> None:
    x, y = training("reg:squarederror")
    dense = DensePredict(xgb.train({"nthread": 1}, xgb.DMatrix(x, label=y), 2))
    for bad in (x.astype(np.float64), np.asfortranarray(x[:5]), x[0]):
        with pytest.raises(ValueError, match="float32"):
            dense(bad)


def test_dense_predict_raises_xgboosts_error() -> None:
    x, y = training("reg:squarederror")
    dense = DensePredict(xgb.train({"nthread": 1}, xgb.DMatrix(x, label=y), 2))
    with pytest.raises(xgb.core.XGBoostError):
        dense(np.zeros((2, FEATURES + 3), dtype=np.float32))


def load(tmp_path: Path, model: object) -> XGBoostPredictor:
    folder = tmp_path / "1"
    folder.mkdir(exist_ok=True)
    joblib.dump(model, folder / "model.joblib")
    return XGBoostPredictor.from_path(str(folder))


def assert_outputs_are_the_models(predictor: XGBoostPredictor, model: xgb.XGBModel) -> None:
    for count in (1, 9, 400):
        data = rows(count, seed=100 + count)
        got = predictor.predict_tensors({"inputs": data})
        assert_same(got["predict"], model.predict(data))
        if "predict_proba" in predictor.methods:
            assert_same(got["predict_proba"], model.predict_proba(data))
            alone = predictor.predict_tensors({"inputs": data}, ["predict_proba"])
            assert list(alone) == ["predict_proba"]
            assert_same(alone["predict_proba"], model.predict_proba(data))
        assert predictor.predict(data.tolist()) == np.asarray(model.predict(data)).tolist()


def binary_classifier() -> xgb.XGBClassifier:
    x, y = training("binary:logistic")
    return xgb.XGBClassifier(n_estimators=15, max_depth=3, n_jobs=1).fit(x, y)


def multiclass_classifier() -> xgb.XGBClassifier:
    x, y = training("multi:softprob")
    return xgb.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(x, y)


def early_stopped_classifier() -> xgb.XGBClassifier:
    x, y = training("binary:logistic")
    model = xgb.XGBClassifier(n_estimators=200, max_depth=3, n_jobs=1,
                              early_stopping_rounds=3, learning_rate=0.8)
    model.fit(x[:400], y[:400], eval_set=[(x[400:], y[400:])], verbose=False)
    assert model.best_iteration < 199  # predictions use the trees up to the best round
    return model


def regressor() -> xgb.XGBRegressor:
    x, y = training("reg:squarederror")
    return xgb.XGBRegressor(n_estimators=15, max_depth=3, n_jobs=1, missing=0.0).fit(x, y)


@pytest.mark.parametrize("make", [binary_classifier, multiclass_classifier,
                                  early_stopped_classifier, regressor])
def test_one_pass_answers_as_the_wrapper(tmp_path: Path, make: object) -> None:
    model = make()  # type: ignore[operator]
    predictor = load(tmp_path, model)
    assert predictor.one_pass is not None
    assert_outputs_are_the_models(predictor, model)


def tied(classes: int) -> xgb.XGBClassifier:
    """A classifier whose every answer is a tie: one constant feature, balanced labels
    (probability exactly 0.5 for two classes, equal ones for more)."""
    x = np.ones((6 * classes, FEATURES), dtype=np.float32)
    y = np.arange(6 * classes) % classes
    return xgb.XGBClassifier(n_estimators=3, n_jobs=1).fit(x, y)


@pytest.mark.parametrize("classes", [2, 3])
def test_ties_answer_as_the_wrapper(tmp_path: Path, classes: int) -> None:
    model = tied(classes)
    probabilities = model.predict_proba(rows(20))
    assert (probabilities == probabilities[:, :1]).all()  # a real tie
    predictor = load(tmp_path, model)
    assert predictor.one_pass is not None
    assert_outputs_are_the_models(predictor, model)


def test_models_without_a_known_derivation_use_their_own_methods(tmp_path: Path) -> None:
    x, y = training("multi:softmax")
    softmax = xgb.XGBClassifier(n_estimators=5, objective="multi:softmax", n_jobs=1).fit(x, y)
    x, y = training("reg:squarederror")
    linear = xgb.XGBRegressor(n_estimators=5, booster="gblinear", n_jobs=1).fit(x, y)
    for model in (softmax, linear):
        predictor = load(tmp_path, model)
        assert predictor.one_pass is None
        assert_outputs_are_the_models(predictor, model)


def test_booster_answers_as_inplace_predict(tmp_path: Path) -> None:
    x, y = training("multi:softprob")
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=8)
    booster.save_model(tmp_path / "model.json")
    predictor = XGBoostPredictor.from_path(str(tmp_path))
    data = rows(30)
    assert_same(predictor.predict_tensors({"inputs": data})["predict"],
                booster.inplace_predict(data, missing=math.nan))


# --- the small-batch walk: XGBoost's own bits, or not used ------------------------------

def train(objective: str, rounds: int = 30, **params: object) -> xgb.Booster:
    x, y = training(objective)
    settings: dict[str, object] = {"objective": objective, "max_depth": 5, "nthread": 1,
                                   **params}
    if objective.startswith("multi"):
        settings["num_class"] = 3
    return xgb.train(settings, xgb.DMatrix(x, label=y), num_boost_round=rounds)


def near_thresholds(walk: SmallBatchPredict, count: int, seed: int) -> Tensor:
    """Rows whose values sit on, just under or just over the model's split thresholds."""
    rng = np.random.default_rng(seed)
    cuts = walk.threshold[np.isfinite(walk.threshold)]
    picked = rng.choice(cuts, size=(count, FEATURES)).astype(np.float32)
    side = rng.integers(-1, 2, size=picked.shape)
    x = np.where(side < 0, np.nextafter(picked, np.float32(-np.inf)),
                 np.where(side > 0, np.nextafter(picked, np.float32(np.inf)), picked))
    x[rng.random(x.shape) < 0.2] = np.nan
    return np.ascontiguousarray(x, dtype=np.float32)


@pytest.mark.parametrize("objective", sorted(TRANSFORMS))
@pytest.mark.parametrize("margin", [False, True])
def test_the_walk_gives_xgboosts_bits(objective: str, margin: bool) -> None:
    booster = train(objective)
    kind = "margin" if margin else "value"
    walk = small_batch_predict(booster, math.nan, (0, 0), margin,
                               DensePredict(booster, margin=margin))
    assert walk is not None
    for count in range(1, walk.max_rows + 1):
        for data in (rows(count, seed=count), near_thresholds(walk, count, seed=count)):
            assert_same(walk(data), booster.inplace_predict(data, missing=np.nan,
                                                            predict_type=kind))


def test_many_random_single_rows() -> None:
    booster = train("binary:logistic", rounds=100, max_depth=6)
    walk = small_batch_predict(booster, math.nan, (0, 0), False, DensePredict(booster))
    assert walk is not None
    data = np.concatenate((rows(2000, seed=5), near_thresholds(walk, 2000, seed=6)))
    expected = booster.inplace_predict(data, missing=np.nan)
    got = np.concatenate([walk(data[i:i + 1]) for i in range(len(data))])
    assert_same(got, expected)


def test_single_leaf_trees() -> None:
    x = np.ones((12, FEATURES), dtype=np.float32)
    booster = xgb.train({"objective": "binary:logistic", "nthread": 1},
                        xgb.DMatrix(x, label=np.arange(12) % 2), num_boost_round=3)
    walk = small_batch_predict(booster, math.nan, (0, 0), False, DensePredict(booster))
    assert walk is not None and walk.depth == 0
    data = rows(3)
    assert_same(walk(data), booster.inplace_predict(data, missing=np.nan))


def test_a_walk_that_would_differ_is_not_used() -> None:
    booster = train("binary:logistic")
    dense = DensePredict(booster)

    def one_bit_off(data: Tensor) -> Tensor:
        result: Tensor = np.nextafter(dense(data), np.float32(2))
        return result

    assert small_batch_predict(booster, math.nan, (0, 0), False, one_bit_off) is None
    assert isinstance(fastest(train("count:poisson")), DensePredict)


def test_what_the_walk_does_not_reproduce_goes_to_xgboost() -> None:
    booster = train("binary:logistic")
    dense = DensePredict(booster)
    assert small_batch_predict(booster, 0.0, (0, 0), False, dense) is None
    assert small_batch_predict(booster, math.nan, (2, 9), False, dense) is None
    for objective in ("count:poisson", "multi:softmax", "binary:hinge"):
        other = train(objective, rounds=5)
        assert small_batch_predict(other, math.nan, (0, 0), False, DensePredict(other)) is None
    x, y = training("reg:squarederror")
    linear = xgb.train({"booster": "gblinear", "nthread": 1}, xgb.DMatrix(x, label=y), 5)
    assert isinstance(fastest(linear), DensePredict)
    categorical = xgb.train({"nthread": 1, "max_cat_to_onehot": 1, "tree_method": "hist"},
                            xgb.DMatrix(np.abs(np.nan_to_num(x)).astype(int).astype(np.float32),
                                        label=y, enable_categorical=True,
                                        feature_types=["c"] + ["q"] * (FEATURES - 1)), 5)
    assert isinstance(fastest(categorical), DensePredict)
    noise = np.random.default_rng(0).normal(size=5000)  # deep trees: over MAX_CELLS nodes
    large = xgb.train({"max_depth": 8, "nthread": 1}, xgb.DMatrix(rows(5000), label=noise), 60)
    assert isinstance(fastest(large), DensePredict)


def test_fastest_walks_small_batches_and_calls_xgboost_for_the_rest() -> None:
    booster = train("binary:logistic")
    predict = fastest(booster)
    assert not isinstance(predict, DensePredict)
    for count in (1, 5, 6, 7, 64, 500):
        data = rows(count, seed=count)
        assert_same(predict(data), booster.inplace_predict(data, missing=np.nan))


def test_empty_batches(tmp_path: Path) -> None:
    """No row: XGBoost's own shapes, one column per class for a multiclass classifier
    (XGBoost's wrapper answers two columns there, the binary layout)."""
    booster = train("binary:logistic")
    empty = rows(0)
    assert_same(fastest(booster)(empty), booster.inplace_predict(empty, missing=np.nan))
    assert_same(DensePredict(booster)(empty), booster.inplace_predict(empty, missing=np.nan))
    for make, classes in ((binary_classifier, 2), (multiclass_classifier, 3)):
        model = make()
        folder = tmp_path / str(classes)
        folder.mkdir()
        got = load(folder, model).predict_tensors({"inputs": empty})
        assert_same(got["predict"], np.asarray(model.predict(empty)).astype(np.int64))
        assert got["predict_proba"].shape == (0, classes)
        assert got["predict_proba"].dtype == np.float32


def test_dense_predict_reuses_a_proxy_per_thread_without_mixing_batches() -> None:
    """Each thread's proxy matrix is pointed at every new batch: batches of other sizes,
    one after another and from two threads at once, answer as XGBoost's own call."""
    x, y = training("binary:logistic")
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=20)
    dense = DensePredict(booster)
    batches = [rows(count, seed=count) for count in (30, 7, 500, 1, 64, 0, 12)]
    expected = [booster.inplace_predict(b, missing=np.nan) if len(b) else
                np.empty((0,), dtype=np.float32) for b in batches]

    def run(rounds: int) -> None:
        for _ in range(rounds):
            for batch, answer in zip(batches, expected):
                assert_same(dense(batch), answer)

    run(2)
    failures: list[BaseException] = []

    def in_thread() -> None:
        try:
            run(20)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=in_thread) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
