"""Real models trained by the tests (never committed): scikit-learn, XGBoost, custom."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np

CUSTOM_PREDICTOR = '''
"""A custom prediction routine as AI Platform users write them."""
import json
import os


class EchoPredictor:
    def __init__(self, scale):
        self.scale = scale

    @classmethod
    def from_path(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            return cls(json.load(f)["scale"])

    def predict(self, instances, **kwargs):
        if kwargs.get("fail"):
            raise RuntimeError("asked to fail")
        if kwargs.get("whoami"):
            return [os.getpid() for _ in instances]
        return [{"instance": inst, "scaled": _scale(inst, self.scale), "kwargs": kwargs}
                for inst in instances]


def _scale(value, factor):
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        return None
    if isinstance(value, list):
        return [_scale(v, factor) for v in value]
    return value * factor
'''


def train_iris(base: Path, version: int = 1) -> Path:
    """A LogisticRegression on iris, saved as ``model.joblib``; integer class labels."""
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = load_iris(return_X_y=True)
    folder = base / str(version)
    folder.mkdir(parents=True)
    joblib.dump(LogisticRegression(max_iter=1000).fit(x, y), folder / "model.joblib")
    return base


def train_xgboost_missing(base: Path, version: int = 1, fmt: str = "json") -> Path:
    """A binary XGBoost Booster whose answer depends on whether feature 0 is *missing*:
    rows with feature 0 missing are positive, rows with feature 0 present (even 0.0) are not.
    """
    import xgboost as xgb

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    y = (rng.random(600) < 0.5).astype(int)
    x[y == 1, 0] = np.nan
    x[y == 0, 0] = rng.normal(size=(y == 0).sum()) * 0.01
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1},
                        xgb.DMatrix(x, label=y, missing=np.nan), num_boost_round=10)
    folder = base / str(version)
    folder.mkdir(parents=True)
    if fmt == "bst":  # what AI Platform calls model.bst: XGBoost's binary JSON
        (folder / "model.bst").write_bytes(booster.save_raw("ubj"))
    else:
        booster.save_model(folder / f"model.{fmt}")
    return base


def make_custom(base: Path, version: int = 1, scale: float = 2.0) -> Path:
    """A custom predictor shipped inside the version folder, as AI Platform packages it."""
    folder = base / str(version)
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(textwrap.dedent(CUSTOM_PREDICTOR))
    (folder / "config.json").write_text('{"scale": %s}' % scale)
    return base


def model_config(root: Path) -> dict[str, dict[str, object]]:
    """``PREDICT_MODELS`` for the three models trained under *root*."""
    return {
        "iris": {"base_path": os.fspath(root / "iris")},
        "xgb": {"base_path": os.fspath(root / "xgb")},
        "echo": {"base_path": os.fspath(root / "echo"), "predictor": "custom",
                 "class": "predictor.EchoPredictor"},
    }
