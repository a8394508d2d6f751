"""Small real models for the lazy tier's tests: each answers differently, so an answer
names the model that gave it."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def train_linear(base: Path, seed: int, version: int = 1) -> Path:
    """A scikit-learn LinearRegression on 3 features whose coefficients are ``seed``, 1, 2
    and intercept ``seed / 8``: it answers :func:`linear_answer` (saved as
    ``<base>/<version>/model.joblib``)."""
    import joblib
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(20, 3))
    model = LinearRegression().fit(x, x @ np.array([1.0, 1.0, 1.0]))
    model.coef_ = np.array([float(seed), 1.0, 2.0])
    model.intercept_ = seed / 8
    folder = base / str(version)
    folder.mkdir(parents=True)
    joblib.dump(model, folder / "model.joblib")
    return base


def linear_answer(seed: int, row: list[float]) -> float:
    """What :func:`train_linear`'s model of *seed* answers for *row* (exact in binary:
    small integers and eighths)."""
    return seed * row[0] + row[1] + 2 * row[2] + seed / 8


def train_booster(base: Path, seed: int, version: int = 1) -> Path:
    """A one-tree XGBoost regressor: feature 0 below 0.5 answers about ``seed``, else about
    ``-seed`` (``<base>/<version>/model.json``)."""
    import xgboost as xgb

    x = np.array([[0.0], [1.0]] * 8)
    y = np.where(x[:, 0] < 0.5, float(seed), -float(seed))
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 1, "eta": 1.0,
                         "base_score": 0.0, "nthread": 1, "lambda": 0.0},
                        xgb.DMatrix(x, label=y), num_boost_round=1)
    folder = base / str(version)
    folder.mkdir(parents=True)
    booster.save_model(folder / "model.json")
    return base
