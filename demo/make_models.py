"""Build the demo models served by ``make serve`` (trained here: no binaries are committed).

    python demo/make_models.py demo/models

writes, under the output folder, TF Serving's layout ``<model>/<version>/...`` and a model
config file ``models.json``:

* ``iris``: a scikit-learn LogisticRegression on the iris data (``model.joblib``);
* ``loans``: an XGBoost model trained with missing values: a missing first feature (JSON
  ``NaN`` or ``null``) means *approve*; ``0.0`` is a real value (``model.json``);
* ``iris_names``: an AI Platform custom prediction routine (``predictor.IrisNames``) that
  answers class names, or probabilities when the request says ``"probabilities": true``.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np

CUSTOM_ROUTINE = '''
"""An AI Platform custom prediction routine, as Google's own sample writes it."""
import os

import joblib

NAMES = ["setosa", "versicolor", "virginica"]


class IrisNames:
    def __init__(self, model):
        self._model = model

    @classmethod
    def from_path(cls, model_dir):
        return cls(joblib.load(os.path.join(model_dir, "model.joblib")))

    def predict(self, instances, **kwargs):
        if kwargs.get("probabilities"):
            return self._model.predict_proba(instances).tolist()
        return [NAMES[int(i)] for i in self._model.predict(instances)]
'''


def train_iris(base: Path, version: int = 1) -> Path:
    """A LogisticRegression on iris, saved as ``<base>/<version>/model.joblib``."""
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


def make_iris_names(base: Path, version: int = 1) -> Path:
    """The custom routine, shipped in the version folder beside the model it wraps."""
    train_iris(base, version)
    (base / str(version) / "predictor.py").write_text(textwrap.dedent(CUSTOM_ROUTINE))
    return base


def main(out: Path) -> None:
    if (out / "models.json").exists():
        print(f"demo models already in {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    train_iris(out / "iris")
    train_xgboost_missing(out / "loans")
    make_iris_names(out / "iris_names")
    config = {
        "iris": {"base_path": "iris"},
        "loans": {"base_path": "loans"},
        "iris_names": {"base_path": "iris_names", "predictor": "custom",
                       "class": "predictor.IrisNames"},
    }
    (out / "models.json").write_text(json.dumps({"models": config}, indent=2) + "\n")
    print(f"demo models written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "demo/models"))
