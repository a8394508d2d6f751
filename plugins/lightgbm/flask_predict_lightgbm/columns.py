"""What a LightGBM model tells of its features: names, and the categories of the columns it
was fitted on as pandas categories (a request's columns become the matrix LightGBM
predicts from through :func:`flask_predict.tabular.code_matrix`).

A model fitted on a pandas DataFrame keeps the column names, and for each column of the
``category`` dtype its categories (``pandas_categorical``, in the frame's order). Such a
model takes one input per feature: numbers (float64; NaN or null is missing), or for a
categorical column its categories' values, text or numbers. A value becomes its code, its
place among the categories, as LightGBM's own ``predict`` on a DataFrame does; a value the
model does not know is missing there, and so it is here (LightGBM sends it down its
split's missing side). A model fitted on a matrix (LightGBM names its features
``Column_0``, ``Column_1``...) takes one matrix of numbers.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence

import lightgbm as lgb

from flask_predict.plugin import NUMBER, TEXT, Column, known_categories

logger = logging.getLogger(__name__)

CATEGORICAL_LINE = re.compile(r"^\[categorical_feature: ([0-9,]*)\]$", re.MULTILINE)
"""The line of a saved model's parameters that lists its categorical features."""


def layout(booster: lgb.Booster) -> tuple[Column, ...] | None:
    """One column per named feature; ``None`` for a model fitted on a matrix."""
    names = booster.feature_name()
    if names == [f"Column_{index}" for index in range(len(names))]:
        return None
    categories = pandas_categories(booster)
    columns = []
    for index, name in enumerate(names):
        known = categories.get(index)
        if known is None:
            columns.append(Column(name, NUMBER, "FP64"))
            continue
        text = all(isinstance(value, str) for value in known)
        columns.append(Column(name, TEXT if text else NUMBER, "BYTES" if text else "FP64",
                              categories={value: code for code, value in enumerate(known)}))
    return tuple(columns)


def pandas_categories(booster: lgb.Booster) -> dict[int, list[Any]]:
    """Feature index -> the categories of a column fitted as a pandas category, in code
    order. Empty when the model says nothing certain: the categories are listed for the
    frame's category columns only, so they match the categorical features one for one only
    when no other feature was declared categorical (those take their codes as numbers)."""
    saved = booster.pandas_categorical or []
    if not saved:
        return {}
    declared = categorical_features(booster)
    if len(saved) != len(declared):
        logger.warning("the model lists categories for %d of its %d categorical features: "
                       "they take their codes as numbers", len(saved), len(declared))
        return {}
    return {int(index): list(known) for index, known in zip(declared, saved)}


def categorical_features(booster: lgb.Booster) -> list[int]:
    """The indices of the features the model splits as categories: the
    ``categorical_feature`` its saved text lists (a Booster read from a file also has it in
    ``params``; one just trained has it only there)."""
    declared = booster.params.get("categorical_feature")
    if isinstance(declared, list) and all(isinstance(index, int) for index in declared):
        return declared
    found = CATEGORICAL_LINE.search(booster.model_to_string())
    return [int(index) for index in found.group(1).split(",") if index] if found else []


def feature_properties(layout: Sequence[Column]) -> dict[str, Any]:
    """What metadata shows of the features: names and known categories."""
    properties: dict[str, Any] = {"feature_names": [column.name for column in layout]}
    categories = known_categories(layout)
    if categories:
        properties["categories"] = categories
    return properties
