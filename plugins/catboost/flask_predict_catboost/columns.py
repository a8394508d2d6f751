"""What a CatBoost model tells of its features (names, which are categorical, which are
text) and a request's columns as the ``Pool`` CatBoost predicts from.

A model fitted on named columns takes one input per feature: numbers (float64; NaN or null
is missing, and CatBoost reads it by the model's ``nan_mode``), categories (text, or whole
numbers, which CatBoost reads as their text: ``3`` and ``"3"`` are one category) and text.
CatBoost keeps no list of a categorical feature's values (it hashes them): a value it never
saw is read as CatBoost reads it, never refused. A missing category or text is refused
(400): CatBoost itself reads neither (its own ``predict`` raises on ``None``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import catboost as cb
import numpy as np

from flask_predict.plugin import ANY, NUMBER, TEXT, Column, InvalidInput, Tensor


def layout(model: cb.CatBoost) -> tuple[Column, ...] | None:
    """One column per feature; ``None`` for a model fitted on a matrix of numbers (its
    features named ``0``, ``1``...)."""
    names = list(model.feature_names_ or [])
    categorical = set(model.get_cat_feature_indices())
    text = set(model.get_text_feature_indices())
    if not (categorical or text) and names == [str(index) for index in range(len(names))]:
        return None
    columns = []
    for index, name in enumerate(names):
        if index in categorical:
            columns.append(Column(name, ANY, "BYTES", missing_ok=False))
        elif index in text:
            columns.append(Column(name, TEXT, "BYTES", missing_ok=False))
        else:
            columns.append(Column(name, NUMBER, "FP64"))
    return tuple(columns)


def to_pool(columns: Mapping[str, Tensor], layout: Sequence[Column]) -> cb.Pool:
    """The ``Pool`` of *columns* (checked by :func:`flask_predict.tabular.read_columns`)."""
    data: dict[str, Any] = {}
    categorical, text = [], []
    for index, column in enumerate(layout):
        values = columns[column.name]
        if column.kind == ANY:
            categorical.append(index)
            data[column.name] = [_category(value, column.name) for value in values.tolist()]
        elif column.kind == TEXT:
            text.append(index)
            data[column.name] = values.tolist()
        else:
            data[column.name] = values
    import pandas as pd

    return cb.Pool(pd.DataFrame(data), cat_features=categorical or None,
                   text_features=text or None)


def _category(value: Any, name: str) -> str:
    """A category as CatBoost reads it: text as it is, a whole number as its digits."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise InvalidInput(f"column {name!r}: a missing value (null or NaN); CatBoost reads "
                           "no missing category: send it as a category of its own")
    raise InvalidInput(f"column {name!r}: a category is text or a whole number, got "
                       f"{value!r}")
