"""Exact attributions of a LightGBM model: its own TreeSHAP (``pred_contrib=True``).

What is explained is the model's raw score (``raw_score=True``): the prediction itself for
regression, the log-odds of the positive class for a binary classifier, one score per class
for a multiclass one (before the softmax). LightGBM answers one contribution per feature and
a last column, the model's expected raw score over its training data: the baseline here.
"""

from __future__ import annotations

from typing import Any, Sequence

import lightgbm as lgb
import numpy as np

from flask_predict.plugin import Column, Explanation, Tensor, from_contributions

OUTPUT_NAME = "raw_score"


def explain(booster: lgb.Booster, features: Tensor, iterations: int, threads: int,
            layout: Sequence[Column] | None, input_name: str,
            classes: Sequence[Any] | None) -> Explanation:
    """The attributions of *features* (the float64 rows the Booster reads: category codes
    for categorical features), by column for a model with *layout*."""
    contributions = np.asarray(booster.predict(features, pred_contrib=True,
                                               num_iteration=iterations, num_threads=threads))
    raw = np.asarray(booster.predict(features, raw_score=True, num_iteration=iterations,
                                     num_threads=threads))
    # K outputs: [N, K * (F + 1)], each output's contributions and baseline in turn
    outputs = booster.num_model_per_iteration()
    contributions = contributions.reshape(len(features), outputs, -1)
    names = [column.name for column in layout] if layout is not None else None
    return from_contributions(contributions, raw, names, input_name, OUTPUT_NAME, classes)
