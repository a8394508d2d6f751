"""The XGBoost plugin on real models trained here: NaN and null are missing, never 0."""

from __future__ import annotations

import math
from pathlib import Path

import joblib
import numpy as np
import pytest
import xgboost as xgb

from flask_predict import FailedPrecondition, InvalidInput
from flask_predict.codecs import loads
from flask_predict_xgboost import XGBoostPredictor
from tests.models import train_xgboost_missing


@pytest.fixture(scope="module", params=["json", "ubj", "bst"])
def booster(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> XGBoostPredictor:
    base = train_xgboost_missing(tmp_path_factory.mktemp("xgb"), fmt=request.param)
    return XGBoostPredictor.from_path(str(base / "1"))


def test_nan_and_null_are_missing_not_zero(booster: XGBoostPredictor) -> None:
    body = loads(b'{"instances": [[NaN, 0, 0, 0], [null, 0, 0, 0], [0.0, 0, 0, 0]]}')
    missing, null, zero = booster.predict(body["instances"])
    assert missing > 0.9 and null == missing and zero < 0.1


def test_width_is_checked_both_ways(booster: XGBoostPredictor) -> None:
    for row in ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0, 5.0]):
        with pytest.raises(InvalidInput, match=r"expected shape \[-1, 4\]"):
            booster.predict([row])


def test_infinity_is_refused_naming_the_feature(booster: XGBoostPredictor) -> None:
    with pytest.raises(FailedPrecondition, match="^feature 2: value 1 is infinite"):
        booster.predict([[0, 0, 0, 0], [0, 0, -math.inf, 0]])


def test_metadata(booster: XGBoostPredictor) -> None:
    meta = booster.metadata()
    assert meta.platform == "xgboost" and meta.properties["objective"] == "binary:logistic"
    assert meta.signature.inputs[0].shape == (-1, 4)
    assert [(o.name, o.datatype) for o in meta.signature.outputs] == [("predict", "FP32")]


def test_sklearn_wrapper_in_joblib(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    y = (x[:, 0] > 0).astype(int)
    (tmp_path / "1").mkdir()
    joblib.dump(xgb.XGBClassifier(n_estimators=5, max_depth=2).fit(x, y),
                tmp_path / "1" / "model.joblib")
    predictor = XGBoostPredictor.from_path(str(tmp_path / "1"))
    assert predictor.predict([[2.0, 0, 0], [-2.0, 0, 0]]) == [1, 0]
    out = predictor.predict_tensors({"x": np.array([[2.0, 0, 0]])})
    assert set(out) == {"predict", "predict_proba"} and out["predict_proba"].shape == (1, 2)
    assert predictor.metadata().properties["classes"] == [0, 1]


def test_native_model_under_joblib_name(tmp_path: Path) -> None:
    base = train_xgboost_missing(tmp_path / "m", fmt="json")
    (base / "1" / "model.json").rename(base / "1" / "model.joblib")
    assert XGBoostPredictor.from_path(str(base / "1")).predict([[None, 0, 0, 0]])[0] > 0.9


def test_wrong_object_in_pickle(tmp_path: Path) -> None:
    joblib.dump({"not": "a model"}, tmp_path / "model.joblib")
    with pytest.raises(TypeError, match="not an XGBoost model"):
        XGBoostPredictor.from_path(str(tmp_path))


def test_thread_count(tmp_path: Path) -> None:
    base = train_xgboost_missing(tmp_path / "m")
    predictor = XGBoostPredictor.from_path(str(base / "1"), nthread=1)
    assert '"nthread":"1"' in predictor.booster.save_config()


def test_after_fork_takes_the_workers_thread_count(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded in the gunicorn master (one thread), then set to each worker's share."""
    base = train_xgboost_missing(tmp_path / "m")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    predictor = XGBoostPredictor.from_path(str(base / "1"))
    assert '"nthread":"1"' in predictor.booster.save_config()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    predictor.after_fork()
    assert '"nthread":"3"' in predictor.booster.save_config()
    # the model's own option wins over the process's count, in the master too
    pinned = XGBoostPredictor.from_path(str(base / "1"), nthread=2)
    pinned.after_fork()
    assert '"nthread":"2"' in pinned.booster.save_config()
