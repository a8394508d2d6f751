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


def train_tree(base: Path, seed: int, rows: int = 2000, version: int = 1) -> list[float]:
    """A scikit-learn DecisionTreeRegressor of a few thousand nodes (some 100 KB of files
    and memory) fitted on random data of *seed*; returns its answers to :data:`PROBES`."""
    import joblib
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(seed)
    model = DecisionTreeRegressor(random_state=0).fit(rng.normal(size=(rows, 3)),
                                                      rng.normal(size=rows))
    folder = base / str(version)
    folder.mkdir(parents=True)
    joblib.dump(model, folder / "model.joblib")
    return [float(v) for v in model.predict(np.array(PROBES))]


def train_forest_booster(base: Path, seed: int, version: int = 1) -> list[float]:
    """An XGBoost regressor of 20 trees fitted on random data of *seed*; returns its
    answers to :data:`PROBES` (float32, as XGBoost computes them)."""
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(500, 3)), rng.normal(size=500)
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 6, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=20)
    folder = base / str(version)
    folder.mkdir(parents=True)
    booster.save_model(folder / "model.json")
    return [float(v) for v in booster.predict(xgb.DMatrix(np.array(PROBES)))]


PROBES = [[0.1, -0.2, 0.3], [1.5, 0.5, -1.0]]
"""The rows every many-model test asks each model about."""
