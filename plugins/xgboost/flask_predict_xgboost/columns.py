"""What an XGBoost model tells of its features: names, types and the categories of its
categorical features (a request's columns become the matrix XGBoost predicts from through
:func:`flask_predict.tabular.code_matrix`).

A model trained with feature names (from a pandas DataFrame, or ``feature_names`` given to
its ``DMatrix``) takes one input per feature: numbers (float32; NaN or null is missing), or
for a categorical feature (``feature_types`` ``"c"``) the categories as XGBoost saved them
with the model (3.1 and later: ``cats`` in the model's JSON, in the training data's order,
text or integers). A category becomes its code, its place in that order, and the matrix
goes to the model's usual prediction (categorical splits read codes). A category the model
does not know is refused (400): XGBoost itself refuses it ("Found a category not in the
training set") from 3.3 on; 3.1 and 3.2 took the nearest one in sorted order instead. A
model saved without its categories (before 3.1) takes the codes themselves, as numbers, and
so does a feature whose categories hold text other than ASCII in a model saved before 3.4
(those releases saved such names cut short: their offsets count characters, not bytes).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Sequence

import xgboost as xgb

from flask_predict.plugin import NUMBER, TEXT, Column, known_categories

logger = logging.getLogger(__name__)

WHOLE_TEXT_FROM = (3, 4)
"""The first XGBoost release that saves text categories other than ASCII whole."""


def layout(booster: xgb.Booster) -> tuple[Column, ...] | None:
    """One column per named feature; ``None`` for a model without feature names."""
    names = booster.feature_names
    if not names:
        return None
    types = booster.feature_types or ["float"] * len(names)
    saved = saved_categories(booster) if "c" in types else {}
    columns = []
    for index, name in enumerate(names):
        known = saved.get(index)
        if types[index] == "c" and known is not None:
            text = all(isinstance(value, str) for value in known)
            columns.append(Column(name, TEXT if text else NUMBER, "BYTES" if text else "FP32",
                                  categories={value: code for code, value in enumerate(known)},
                                  strict=True))
        else:
            columns.append(Column(name, NUMBER, "FP32"))
    return tuple(columns)


def saved_categories(booster: xgb.Booster) -> dict[int, list[Any]]:
    """Feature index -> its categories in code order, as saved in the model (``cats``:
    text as offsets into UTF-8 bytes, integers as values); empty for a model saved before
    XGBoost 3.1."""
    saved = json.loads(booster.save_raw("json"))
    learner = saved["learner"]
    whole_text = tuple(saved.get("version", ())) >= WHOLE_TEXT_FROM
    gradient_booster = learner.get("gradient_booster", {})
    model = gradient_booster.get("model") or gradient_booster.get("gbtree", {}).get("model", {})
    cats = model.get("cats") if isinstance(model, dict) else None
    if not isinstance(cats, dict):
        return {}
    found: dict[int, list[Any]] = {}
    for index, encoding in enumerate(cats.get("enc", [])):
        offsets = encoding.get("offsets")
        if offsets:  # text
            data = bytes(value & 0xFF for value in encoding["values"])
            if not whole_text and not data.isascii():
                logger.warning("feature %d: XGBoost before 3.4 saved its categories cut "
                               "short (text other than ASCII); it takes category codes", index)
                continue
            found[index] = [data[begin:end].decode("utf-8")
                            for begin, end in zip(offsets, offsets[1:])]
        elif "type" in encoding:  # integers
            found[index] = [int(value) for value in encoding["values"]]
    return found


def feature_properties(booster: xgb.Booster, layout: Sequence[Column]) -> dict[str, Any]:
    """What metadata shows of the features: names, types, known categories."""
    properties: dict[str, Any] = {"feature_names": [column.name for column in layout]}
    if booster.feature_types:
        properties["feature_types"] = list(booster.feature_types)
    categories = known_categories(layout)
    if categories:
        properties["categories"] = categories
    return properties
