"""Exact attributions of an XGBoost model: its own TreeSHAP (``pred_contribs=True``).

What is explained is the model's raw score, its *margin* (``output_margin=True``): the
prediction itself for squared-error regression, the log-odds of the positive class for a
binary classifier, one score per class for a multiclass one (before the softmax). XGBoost
answers one contribution per feature and a last column, the *bias*: the model's expected
margin over its training data, the baseline here. The contributions plus the bias are the
margin, to the float32 rounding of XGBoost's own sums.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import xgboost as xgb

from flask_predict.plugin import Column, Explanation, Tensor, from_contributions

OUTPUT_NAME = "margin"


def explain(booster: xgb.Booster, features: Tensor, threads: int,
            layout: Sequence[Column] | None, input_name: str,
            classes: Sequence[Any] | None) -> Explanation:
    """The attributions of *features* (the float32 rows the model predicts from: category
    codes for categorical features), by column for a model with *layout*, else as one row
    of numbers per row of *input_name*; the matrix built on the model's *threads* (0: every
    core), as it predicts."""
    matrix = xgb.DMatrix(features, missing=np.nan, nthread=threads or -1,
                         feature_names=booster.feature_names,
                         feature_types=booster.feature_types,
                         enable_categorical=bool(booster.feature_types
                                                 and "c" in booster.feature_types))
    # strict shapes: contributions [N, K, F + 1], margin [N, K]
    contributions = booster.predict(matrix, pred_contribs=True, strict_shape=True)
    margin = booster.predict(matrix, output_margin=True, strict_shape=True)
    names = [column.name for column in layout] if layout is not None else None
    return from_contributions(contributions, margin, names, input_name, OUTPUT_NAME, classes)
