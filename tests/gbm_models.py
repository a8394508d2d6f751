"""LightGBM and CatBoost models trained by the tests on one small table (never committed),
saved as each library's documentation saves them, and the rows the tests send.

The table: ``color`` (text categories, not in sorted order), ``size`` (numbers, some
missing) and ``grade`` (integer categories). Three targets: ``price`` (regression),
``sold`` (binary) and ``tier`` (three classes, labelled with text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

N = 400
COLORS = ["red", "blue", "green", "Tokyo"]
GRADES = [11, 3, 7]
TIERS = ["low", "mid", "high"]

ROWS: list[dict[str, Any]] = [
    {"color": "red", "size": 0.25, "grade": 3},
    {"color": "Tokyo", "size": None, "grade": 11},
    {"color": None, "size": 1.5, "grade": 7},
    {"color": "green", "size": -0.75, "grade": 3},
]
"""Rows sent: each kind of value, a missing size and a missing color."""


def table(seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """The training frame and its three targets."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    shops = pd.DataFrame({
        "color": pd.Categorical(rng.choice(COLORS, N), categories=COLORS),
        "size": rng.normal(size=N),
        "grade": pd.Categorical(rng.choice(GRADES, N), categories=GRADES)})
    shops.loc[::9, "size"] = np.nan
    shops.loc[::13, "color"] = None
    red, big = (shops.color == "red").to_numpy(), (shops["size"] > 0.3).to_numpy()
    seven = (shops.grade == 7).to_numpy()
    price = 2.0 * red + np.nan_to_num(shops["size"].to_numpy()) + 0.5 * seven
    sold = (red | big | seven).astype(int)
    tier = np.array(TIERS)[np.digitize(price, [0.2, 1.2])]
    return shops, {"price": price, "sold": sold, "tier": tier}


def frame(rows: list[dict[str, Any]]) -> Any:
    """*rows* as the DataFrame a LightGBM model fitted on :func:`table` is asked in process."""
    import pandas as pd

    return pd.DataFrame({
        "color": pd.Categorical([row["color"] for row in rows], categories=COLORS),
        "size": [np.nan if row["size"] is None else row["size"] for row in rows],
        "grade": pd.Categorical([row["grade"] for row in rows], categories=GRADES)})


def train_lightgbm(base: Path, target: str, fmt: str = "txt", version: int = 1) -> Any:
    """A LightGBM model of *target* fitted on :func:`table`: its scikit-learn wrapper, saved
    as ``model.joblib`` (*fmt* ``joblib``) or its Booster's ``model.txt`` / ``model.bst``.
    Returns the fitted wrapper."""
    import joblib
    import lightgbm as lgb

    shops, targets = table()
    cls = lgb.LGBMRegressor if target == "price" else lgb.LGBMClassifier
    model = cls(n_estimators=20, num_leaves=7, min_child_samples=5, verbose=-1,
                n_jobs=1).fit(shops, targets[target])
    folder = base / str(version)
    folder.mkdir(parents=True)
    if fmt == "joblib":
        joblib.dump(model, folder / "model.joblib")
    else:
        model.booster_.save_model(folder / f"model.{fmt}")
    return model


REVIEWS = ["great value", "poor service", "fast and great", "slow"]
"""The ``review`` text of :data:`ROWS`, one each, sent to CatBoost's models."""


def catboost_frame(rows: list[dict[str, Any]], text: bool = True) -> Any:
    """*rows* as the DataFrame a CatBoost model fitted on :func:`catboost_table` is asked
    in process: a missing color is the category ``"none"`` (CatBoost reads no missing
    category), a missing size NaN."""
    import pandas as pd

    data = pd.DataFrame({
        "color": ["none" if row["color"] is None else row["color"] for row in rows],
        "size": [np.nan if row["size"] is None else row["size"] for row in rows],
        "grade": [row["grade"] for row in rows]})
    if text:
        data["review"] = [REVIEWS[index % len(REVIEWS)] for index in range(len(rows))]
    return data


def catboost_table(text: bool = True) -> tuple[Any, dict[str, Any]]:
    """:func:`table` as CatBoost takes it, with a ``review`` text column."""
    shops, targets = table()
    rows = [{"color": None if isinstance(c, float) else c, "size": s, "grade": int(g)}
            for c, s, g in zip(shops.color.astype(object), shops["size"], shops.grade)]
    data = catboost_frame(rows, text=False)
    if text:
        words = np.where(targets["sold"] == 1, "great value fast", "poor slow service")
        data["review"] = words
    return data, targets


def train_catboost(base: Path, target: str, fmt: str = "cbm", version: int = 1) -> Any:
    """A CatBoost model of *target* (categorical ``color`` and ``grade``; the text feature
    ``review`` unless *fmt* is ``json``, which holds no text features), saved as
    ``model.cbm``, ``model.json`` or ``model.joblib``. Returns the fitted model."""
    import catboost as cb
    import joblib

    data, targets = catboost_table(text=fmt != "json")
    cls = cb.CatBoostRegressor if target == "price" else cb.CatBoostClassifier
    text = ["review"] if fmt != "json" else None
    model = cls(iterations=20, depth=4, verbose=False, thread_count=1, allow_writing_files=False,
                cat_features=["color", "grade"], text_features=text).fit(data, targets[target])
    folder = base / str(version)
    folder.mkdir(parents=True)
    if fmt == "joblib":
        joblib.dump(model, folder / "model.joblib")
    elif fmt == "json":
        model.save_model(folder / "model.json", format="json",
                         pool=cb.Pool(data, cat_features=["color", "grade"]))
    else:
        model.save_model(folder / "model.cbm")
    return model
