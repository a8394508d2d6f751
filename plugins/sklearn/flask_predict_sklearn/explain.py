"""Exact attributions of a linear scikit-learn model: its coefficients times each feature's
distance from a baseline row.

A linear model's raw output is ``x @ coef_.T + intercept_``: ``decision_function`` for a
classifier (the log-odds of the positive class for a binary ``LogisticRegression``, one
score per class for a multiclass one), ``predict`` for a regressor. With a baseline row
``b``, feature ``j`` of row ``x`` is attributed ``coef_[k, j] * (x[j] - b[j])`` and the
baseline output is ``b @ coef_.T + intercept_``: their sum is the raw output, exactly.
Steps before the linear one are allowed when each scales its features one by one
(``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``): the distance is
then taken after them, and stays the feature's own.

The baseline row, in this order:

1. ``explanation_baseline.json`` in the version folder: one number per feature (a list, or
   an object by column name), such as the training data's mean saved beside the model;
2. the training mean a leading ``StandardScaler`` keeps (``mean_``);
3. zeros: the baseline output is then the intercept.

A model is taken as linear only when its own raw output agrees with that sum on the
baseline row and on one row per feature moved away from it (checked when it loads):
generalised linear models (``PoissonRegressor``), kernels and trees are not.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from flask_predict import Explanation
from flask_predict.types import Tensor

BASELINE_FILE = "explanation_baseline.json"
SCALERS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler")
"""Steps that scale each feature on its own: distances after them stay the feature's."""
AGREEMENT = 1e-9
"""How close (relative to the terms' size) the model's output must be to the linear sum."""

Frame = Callable[[Tensor], Any]
"""Rows of float64 features -> what the model takes (the matrix, or a DataFrame)."""


@dataclass(frozen=True)
class LinearExplainer:
    """How one linear model is explained."""

    model: Any
    scalers: tuple[Any, ...]
    linear: Any
    method: str
    """``decision_function`` (classifiers) or ``predict`` (regressors): the raw output."""
    baseline_row: Tensor
    labels: tuple[str, ...]
    frame: Frame

    def explain(self, features: Tensor, names: Sequence[str] | None,
                input_name: str) -> Explanation:
        """Attributions of float64 *features* (rows), by column when *names* are given."""
        distance = self._scaled(features) - self._scaled(self.baseline_row[np.newaxis, :])
        coef = np.atleast_2d(np.asarray(self.linear.coef_, dtype=np.float64))
        contributions = distance[:, np.newaxis, :] * coef[np.newaxis, :, :]
        rows = features.shape[0]
        baseline = np.broadcast_to(self._linear(self.baseline_row[np.newaxis, :]),
                                   (rows, coef.shape[0])).copy()
        output = np.asarray(getattr(self.model, self.method)(self.frame(features)),
                            dtype=np.float64).reshape(rows, -1)
        if names is None:
            attributions = {input_name: contributions}
        else:
            attributions = {name: contributions[:, :, j] for j, name in enumerate(names)}
        return Explanation(attributions=attributions, baseline=baseline, output=output,
                           output_name=self.method, labels=self.labels)

    def _scaled(self, rows: Tensor) -> Tensor:
        data = self.frame(rows)
        for scaler in self.scalers:
            data = scaler.transform(data)
        return np.asarray(data, dtype=np.float64)

    def _linear(self, rows: Tensor) -> Tensor:
        coef = np.atleast_2d(np.asarray(self.linear.coef_, dtype=np.float64))
        result: Tensor = self._scaled(rows) @ coef.T + np.asarray(self.linear.intercept_,
                                                                  dtype=np.float64)
        return result


def linear_explainer(model: Any, model_dir: str | None, names: Sequence[str] | None,
                     frame: Frame) -> LinearExplainer | str:
    """The explainer of *model* (fitted on features *names*, or a matrix for ``None``),
    or why it has none."""
    from sklearn.base import is_classifier

    steps = _steps(model)
    linear, scalers = steps[-1], tuple(steps[:-1])
    for scaler in scalers:
        if type(scaler).__name__ not in SCALERS:
            return (f"a Pipeline with a {type(scaler).__name__} step: attributions are "
                    f"served for linear models after {', '.join(SCALERS)} only")
    if getattr(linear, "coef_", None) is None or getattr(linear, "intercept_", None) is None:
        return f"a {type(linear).__name__} (not a linear model with coef_ and intercept_)"
    method = "decision_function" if is_classifier(linear) else "predict"
    if not callable(getattr(model, method, None)):
        return f"a {type(linear).__name__} without {method}()"
    width = np.atleast_2d(linear.coef_).shape[1]
    baseline_row = _baseline_row(model_dir, names, width, scalers)
    classes = getattr(linear, "classes_", None)
    labels: tuple[str, ...] = ()
    if classes is not None:
        labels = tuple(str(c) for c in classes)
        labels = labels[1:] if len(labels) == 2 else labels
    explainer = LinearExplainer(model, scalers, linear, method, baseline_row, labels, frame)
    if not _agrees(explainer, width):
        return f"a {type(linear).__name__} (its output is not linear in its features)"
    return explainer


def _steps(model: Any) -> list[Any]:
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        return [step for _, step in model.steps if step not in (None, "passthrough")]
    return [model]


def _baseline_row(model_dir: str | None, names: Sequence[str] | None, width: int,
                  scalers: Sequence[Any]) -> Tensor:
    """The baseline row: the saved file, else a leading StandardScaler's mean, else 0."""
    path = os.path.join(model_dir, BASELINE_FILE) if model_dir else ""
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            saved = json.load(file)
        if isinstance(saved, dict) and names is not None:
            missing = [name for name in names if name not in saved]
            if missing:
                raise TypeError(f"{path} has no value for column(s) {missing}")
            saved = [saved[name] for name in names]
        row = np.asarray(saved, dtype=np.float64)
        if row.shape != (width,) or not np.isfinite(row).all():
            raise TypeError(f"{path} must hold {width} finite numbers, one per feature")
        return row
    first = scalers[0] if scalers else None
    mean = getattr(first, "mean_", None)
    if type(first).__name__ == "StandardScaler" and mean is not None:
        return np.asarray(mean, dtype=np.float64)
    return np.zeros(width)


def _agrees(explainer: LinearExplainer, width: int) -> bool:
    """The model's own raw output on the baseline row and on each feature moved by one is
    the linear sum, to float64 rounding."""
    probes = np.repeat(explainer.baseline_row[np.newaxis, :], width + 1, axis=0)
    probes[np.arange(1, width + 1), np.arange(width)] += 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a probe far from the data may overflow a link
        try:
            own = np.asarray(getattr(explainer.model, explainer.method)(
                explainer.frame(probes)), dtype=np.float64).reshape(width + 1, -1)
        except (ValueError, FloatingPointError):
            return False
    linear = explainer._linear(probes)
    if own.shape != linear.shape or not np.isfinite(own).all():
        return False
    scale = max(1.0, float(np.abs(linear).max()))
    return bool(math.isclose(float(np.abs(own - linear).max()), 0.0,
                             abs_tol=AGREEMENT * scale))
