"""Models fitted on tables and on text, trained by the tests with their frameworks' documented
APIs and saved as users save them (never committed), with the rows the tests send and the
frames those rows are in process.

* ``people``: a scikit-learn Pipeline fitted on a DataFrame mixing numbers and text: ``age``
  and ``income`` scaled, ``city`` one-hot encoded (an unknown city refused), ``segment``
  imputed then one-hot encoded (``null`` taken), a LogisticRegression answering labels;
* ``numbers``: a LogisticRegression fitted on a DataFrame of numbers only (rows may come as
  one matrix);
* ``reviews``: a text pipeline, TfidfVectorizer and LogisticRegression, fitted on strings;
* ``shops``: an XGBoost classifier with a categorical ``color`` and a number ``size``, saved
  as ``model.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

RNG_SEED = 7
N = 160

CITIES = ["Paris", "London", "Rome"]
SEGMENTS = ["retail", "business"]
COLORS = ["red", "blue", "green"]

PEOPLE_ROWS: list[dict[str, Any]] = [
    {"age": 31, "income": 40000.5, "city": "Paris", "segment": "retail"},
    {"age": 58, "income": 61000.0, "city": "Rome", "segment": None},
    {"age": 44, "income": 52500.25, "city": "London", "segment": "business"},
]
"""Rows sent to ``people``: numbers of both kinds, each city, a missing segment."""

NUMBER_ROWS: list[dict[str, Any]] = [{"age": 0.25, "income": 0.5},
                                     {"age": 0.625, "income": 0.375}]
"""Rows sent to ``numbers`` (values exact in float32, which grps's ``ndarray`` carries)."""

REVIEWS = ["great value", "poor service", "great staff, poor food"]
"""Texts sent to ``reviews``."""

SHOP_ROWS: list[dict[str, Any]] = [{"color": "red", "size": 0.25},
                                   {"color": None, "size": 1.5},
                                   {"color": "green", "size": None}]
"""Rows sent to ``shops``: a missing color and a missing size (XGBoost's missing values)."""


def frame(rows: list[dict[str, Any]]) -> Any:
    """*rows* as the DataFrame the model is asked in process (``None`` kept as sent)."""
    import pandas as pd

    return pd.DataFrame({name: [row[name] for row in rows] for name in rows[0]})


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """*rows* as one list of values per column."""
    return {name: [row[name] for row in rows] for name in rows[0]}


def train_people(base: Path) -> Any:
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(RNG_SEED)
    people = pd.DataFrame({"age": rng.integers(18, 80, N),
                           "income": rng.normal(50_000, 12_000, N),
                           "city": rng.choice(CITIES, N),
                           "segment": rng.choice(SEGMENTS, N).astype(object)})
    people.loc[::9, "segment"] = None
    stays = ((people.city == "Paris") | (people.age > 50)).map({True: "stays", False: "leaves"})
    model = make_pipeline(ColumnTransformer([
        ("numbers", StandardScaler(), ["age", "income"]),
        ("city", OneHotEncoder(handle_unknown="error"), ["city"]),
        ("segment", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                  OneHotEncoder(handle_unknown="ignore")), ["segment"])]),
        LogisticRegression()).fit(people, stays)
    _save_joblib(base, model)
    return model


def train_numbers(base: Path) -> Any:
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(RNG_SEED + 1)
    numbers = pd.DataFrame({"age": rng.uniform(0.18, 0.8, N), "income": rng.normal(0.5, 0.1, N)})
    model = LogisticRegression().fit(numbers, numbers.age + numbers.income > 1)
    _save_joblib(base, model)
    return model


def train_reviews(base: Path) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts = ["great value", "poor service", "great staff", "poor food", "great food",
             "poor value"] * 4
    liked = [1, 0, 1, 0, 1, 0] * 4
    model = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(texts, liked)
    _save_joblib(base, model)
    return model


def train_shops(base: Path) -> Any:
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(RNG_SEED + 2)
    shops = pd.DataFrame({"color": pd.Categorical(rng.choice(COLORS, N), categories=COLORS),
                          "size": rng.normal(1, 1, N)})
    sold = ((shops.color == "red") | (shops["size"] > 1.2)).astype(int)
    model = xgb.XGBClassifier(n_estimators=8, max_depth=3, enable_categorical=True,
                              tree_method="hist").fit(shops, sold)
    folder = base / "1"
    folder.mkdir(parents=True)
    model.save_model(folder / "model.json")
    return model


def _save_joblib(base: Path, model: Any) -> None:
    import joblib

    folder = base / "1"
    folder.mkdir(parents=True)
    joblib.dump(model, folder / "model.joblib")


TRAINERS = {"people": train_people, "numbers": train_numbers, "reviews": train_reviews,
            "shops": train_shops}


def train_all(root: Path) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Every model under *root*: (name -> the fitted model, ``PREDICT_MODELS``)."""
    fitted = {name: train(root / name) for name, train in TRAINERS.items()}
    return fitted, {name: {"base_path": os.fspath(root / name)} for name in TRAINERS}
