"""Explanations: exact feature attributions of a model's raw output (the ``explain`` verb).

A predictor that can explain (:meth:`Predictor.explain`) answers an :class:`Explanation`:
for every row and every explained output, how far each feature moved the model's raw
output away from a baseline, so that the baseline plus the attributions of every feature
is the output. Nothing here is sampled or approximated: the only gap between the two
sides is the rounding of the model's own arithmetic, reported as :meth:`Explanation.gap`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import CannotExplain, PredictorFailed
from .types import Tensor

EXPLAINED_BY = ("XGBoost, LightGBM and CatBoost models (their own SHAP values), linear "
                "scikit-learn models (coefficients) and predictors that implement explain()")
"""What can explain, as the refusal of every other model names it."""


@dataclass
class Explanation:
    """Attributions of *rows* rows over *outputs* explained outputs of one model."""

    attributions: dict[str, Tensor]
    """Input name -> its attributions, ``[rows, outputs, *one row's shape of the input]``:
    ``[N, K]`` for one column of a table, ``[N, K, n_features]`` for a matrix of features."""
    baseline: Tensor
    """``[N, K]``: the output the model gives when no feature is known (its expected value
    over the training data for trees, the intercept plus the coefficients times the
    baseline row for a linear model)."""
    output: Tensor
    """``[N, K]``: the raw output explained, as the model computes it."""
    output_name: str
    """Which output is explained: ``margin`` (a tree model's raw score, log-odds for a binary
    classifier), ``decision_function``, ``predict``..."""
    labels: tuple[str, ...] = ()
    """One display name per explained output (a classifier's class labels), or none."""

    @property
    def rows(self) -> int:
        return int(self.baseline.shape[0])

    def totals(self) -> Tensor:
        """``[N, K]``: the baseline plus every attribution, in float64."""
        total = np.array(self.baseline, dtype=np.float64)
        for values in self.attributions.values():
            flat = np.asarray(values, dtype=np.float64).reshape(total.shape + (-1,))
            total += flat.sum(axis=2)
        return total

    def gap(self) -> Tensor:
        """``[N, K]``: ``|output - (baseline + attributions)|``, the rounding of the model's
        arithmetic (Google's ``approximationError``)."""
        gap: Tensor = np.abs(np.asarray(self.output, dtype=np.float64) - self.totals())
        return gap


def from_contributions(contributions: Any, output: Any, names: Sequence[str] | None,
                       input_name: str, output_name: str,
                       classes: Sequence[Any] | None = None) -> Explanation:
    """The explanation of a tree library's SHAP values: *contributions* ``[N, F + 1]``, or
    ``[N, K, F + 1]`` for *K* outputs, one per feature and the baseline last (XGBoost's
    ``pred_contribs``, LightGBM's ``pred_contrib``, CatBoost's ``ShapValues``), of the raw
    *output* ``[N]`` or ``[N, K]``; by column for a model with feature *names*, else as one
    row of features of *input_name*."""
    values = np.asarray(contributions, dtype=np.float64)
    if values.ndim == 2:
        values = values[:, np.newaxis, :]
    per_feature = values[:, :, :-1]
    if names is not None:
        attributions = {name: per_feature[:, :, j] for j, name in enumerate(names)}
    else:
        attributions = {input_name: per_feature}
    rows, outputs = values.shape[:2]
    return Explanation(attributions=attributions, baseline=values[:, :, -1],
                       output=np.asarray(output, dtype=np.float64).reshape(rows, outputs),
                       output_name=output_name, labels=class_labels(classes, outputs))


def class_labels(classes: Sequence[Any] | None, outputs: int) -> tuple[str, ...]:
    """The class each of *outputs* explained outputs scores: the positive class of a
    binary classifier (its one raw output), every class of a multiclass one; none for a
    regressor (*classes* ``None``)."""
    if classes is None:
        return ()
    names = tuple(str(value) for value in classes)
    if outputs == 1 and len(names) == 2:
        return names[1:]
    return names if len(names) == outputs else ()


def checked(explanation: Any, rows: int, model: str) -> Explanation:
    """*explanation* as a predictor returned it for *rows* rows; anything else than a
    well-shaped, finite :class:`Explanation` is the predictor's failure (500)."""
    if not isinstance(explanation, Explanation):
        raise PredictorFailed(f"model {model!r} explained with a "
                              f"{type(explanation).__name__}, not an Explanation")
    shape = np.shape(explanation.baseline)
    problem = ""
    if len(shape) != 2 or shape[0] != rows:
        problem = f"baseline of shape {list(shape)}, not [{rows}, outputs]"
    elif np.shape(explanation.output) != shape:
        problem = f"output of shape {list(np.shape(explanation.output))}, not {list(shape)}"
    elif explanation.labels and len(explanation.labels) != shape[1]:
        problem = f"{len(explanation.labels)} labels for {shape[1]} outputs"
    elif not explanation.attributions:
        problem = "no attributions"
    for name, values in explanation.attributions.items():
        if problem:
            break
        if np.shape(values)[:2] != shape:
            problem = f"attributions of {name!r} of shape {list(np.shape(values))}"
    if not problem and not np.isfinite(explanation.totals()).all():
        problem = "attributions that are not finite"
    if problem:
        raise PredictorFailed(f"model {model!r} explained with {problem}")
    return explanation


def cannot_explain(what: str) -> CannotExplain:
    """The refusal (400) of a model that cannot explain: *what* it is, and what can."""
    return CannotExplain(f"{what} cannot explain its predictions: explanations are "
                              f"served for {EXPLAINED_BY}")
