"""Exact attributions of a linear scikit-learn model: its coefficients times each feature's
distance from a baseline.

A linear model's raw output is ``z @ coef_.T + intercept_``, where ``z`` is what its linear
step reads: ``decision_function`` for a classifier (the log-odds of the positive class for
a binary ``LogisticRegression``, one score per class for a multiclass one), ``predict`` for
a regressor. Feature ``j`` is attributed ``coef_[k, j] * (z[j] - b[j])`` and the baseline
output is ``b @ coef_.T + intercept_``: their sum is the raw output, exactly.

The steps before the linear one may change each column on its own: scalers
(``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``), a
``SimpleImputer``, a ``OneHotEncoder``, and as the first step a ``ColumnTransformer`` of
those (or ``"passthrough"``, ``"drop"``). The attribution of an input column is then the
sum over what it became (a one-hot column's indicators), so a model fitted on a DataFrame
is explained by column name.

The baseline ``b``:

* by default, zero where the linear step reads: the intercept is the baseline output. After
  a ``StandardScaler`` zero is the training mean, so the attributions are the coefficients
  times each feature's (scaled) distance from its mean; for a one-hot column it is "none of
  the categories"; for a model without such steps, zero itself;
* ``explanation_baseline.json`` in the version folder, when there: one row of the model's
  input (a list of numbers, or an object by column name, categories as text), such as the
  training data's mean saved beside the model; ``b`` is what the steps make of it.

A model is linear here only when its linear step answers that sum on zero and on each unit
row (checked when it loads): generalised linear models (``PoissonRegressor``), kernels and
trees are not.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from flask_predict.plugin import Explanation, Tensor, class_labels

BASELINE_FILE = "explanation_baseline.json"
PER_COLUMN = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler",
              "SimpleImputer", "OneHotEncoder")
"""Steps that transform each column on its own."""
AGREEMENT = 1e-9
"""How close (relative to the terms' size) the linear step must be to its sum."""

Frame = Callable[[Any], Any]
"""Rows (a matrix, or the request's columns) -> what the model takes."""


@dataclass(frozen=True)
class LinearExplainer:
    """How one linear model is explained."""

    model: Any
    steps: tuple[Any, ...]
    """The steps before the linear one."""
    linear: Any
    method: str
    """``decision_function`` (classifiers) or ``predict`` (regressors): the raw output."""
    owners: Tensor
    """For each column the linear step reads, the input feature it comes from."""
    baseline_z: Tensor
    """The baseline, where the linear step reads."""
    labels: tuple[str, ...]

    def explain(self, data: Any, rows: int, names: Sequence[str] | None,
                input_name: str) -> Explanation:
        """Attributions of *data* (what the model takes, *rows* rows), by column when
        *names* are given, else as one list per row of *input_name*."""
        z = self.transform(data)
        if not np.isfinite(z).all():
            raise ValueError("a feature is missing and the model does not fill it in")
        coef = np.atleast_2d(np.asarray(self.linear.coef_, dtype=np.float64))
        terms = (z - self.baseline_z)[:, np.newaxis, :] * coef[np.newaxis, :, :]
        width = len(names) if names is not None else int(self.owners.max(initial=-1)) + 1
        membership = np.zeros((len(self.owners), width))  # column read -> its feature
        membership[np.arange(len(self.owners)), self.owners] = 1.0
        per_feature = terms @ membership
        baseline = np.broadcast_to(self.baseline_z @ coef.T + self.linear.intercept_,
                                   (rows, coef.shape[0])).astype(np.float64)
        output = np.asarray(getattr(self.model, self.method)(data),
                            dtype=np.float64).reshape(rows, -1)
        if names is None:
            attributions = {input_name: per_feature}
        else:
            attributions = {name: per_feature[:, :, j] for j, name in enumerate(names)}
        return Explanation(attributions=attributions, baseline=baseline, output=output,
                           output_name=self.method, labels=self.labels)

    def transform(self, data: Any) -> Tensor:
        """What the linear step reads of *data*, as a dense float64 matrix."""
        for step in self.steps:
            data = step.transform(data)
        dense = data.toarray() if hasattr(data, "toarray") else data
        return np.asarray(dense, dtype=np.float64)


def linear_explainer(model: Any, model_dir: str | None, names: Sequence[str] | None,
                     width: int, frame: Frame) -> LinearExplainer | str:
    """The explainer of *model* (fitted on columns *names*, or on a matrix of *width*
    features for ``None``), or why it has none."""
    from sklearn.base import is_classifier

    steps = _steps(model)
    linear, before = steps[-1], tuple(steps[:-1])
    if getattr(linear, "coef_", None) is None or getattr(linear, "intercept_", None) is None:
        return f"a {type(linear).__name__} (not a linear model with coef_ and intercept_)"
    method = "decision_function" if is_classifier(linear) else "predict"
    if not callable(getattr(model, method, None)):
        return f"a {type(linear).__name__} without {method}()"
    try:
        owners = _owners(before, width)
    except ValueError as exc:
        return f"a Pipeline with {exc}"
    coef = np.atleast_2d(np.asarray(linear.coef_, dtype=np.float64))
    if owners.shape != (coef.shape[1],):
        return "a Pipeline whose steps change the number of features"
    if not _agrees(linear, method, coef):
        return f"a {type(linear).__name__} (its output is not linear in its features)"
    labels = class_labels(getattr(linear, "classes_", None), coef.shape[0])
    explainer = LinearExplainer(model, before, linear, method, owners,
                                np.zeros(coef.shape[1]), labels)
    saved = _saved_baseline(model_dir, names, width)
    if saved is not None:
        baseline_z = explainer.transform(frame(saved))[0]
        explainer = LinearExplainer(model, before, linear, method, owners, baseline_z,
                                    explainer.labels)
    return explainer


def _steps(model: Any) -> list[Any]:
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        return [step for _, step in model.steps if step not in (None, "passthrough")]
    return [model]


def _owners(steps: Sequence[Any], width: int) -> Tensor:
    """The input feature each column after *steps* comes from (``ValueError``, saying
    which step, when a column would mix features)."""
    owners = np.arange(width)
    for index, step in enumerate(steps):
        kind = type(step).__name__
        if kind == "ColumnTransformer" and index == 0:
            owners = _column_owners(step, width)
        elif kind == "OneHotEncoder":
            owners = owners[_encoded_owners(step)]
        elif kind == "SimpleImputer" and getattr(step, "add_indicator", False):
            raise ValueError("a SimpleImputer(add_indicator=True) step")
        elif kind not in PER_COLUMN:
            raise ValueError(f"a {kind} step: attributions are served for linear models "
                             f"after {', '.join(PER_COLUMN)} steps, or a ColumnTransformer "
                             "of them first")
    return owners


def _encoded_owners(encoder: Any) -> Tensor:
    """For each column a fitted OneHotEncoder writes, the column it reads."""
    if getattr(encoder, "infrequent_categories_", None) is not None and any(
            group is not None for group in encoder.infrequent_categories_):
        raise ValueError("a OneHotEncoder grouping infrequent categories")
    drop = getattr(encoder, "drop_idx_", None)
    sizes = [len(categories) - (drop is not None and drop[i] is not None)
             for i, categories in enumerate(encoder.categories_)]
    return np.repeat(np.arange(len(sizes)), sizes)


def _column_owners(columns: Any, width: int) -> Tensor:
    """For each column a fitted ColumnTransformer writes, the input column it reads."""
    owners = np.full(sum(s.stop - s.start for s in columns.output_indices_.values()), -1)
    for name, transformer, selected in columns.transformers_:
        if transformer == "drop" or name not in columns.output_indices_:
            continue
        read = np.arange(width)[_selection(selected, columns, width)]
        inner = _steps(transformer) if transformer != "passthrough" else []
        mapped = read[_owners(inner, len(read))] if inner else read
        place = columns.output_indices_[name]
        if len(mapped) != place.stop - place.start:
            raise ValueError(f"a {type(transformer).__name__} that changes the number of "
                             "features")
        owners[place] = mapped
    if (owners < 0).any():
        raise ValueError("a ColumnTransformer whose columns could not all be traced")
    return owners


def _selection(selected: Any, columns: Any, width: int) -> Any:
    """A ColumnTransformer's fitted column selection as positions of the input."""
    names = getattr(columns, "feature_names_in_", None)
    if isinstance(selected, str) or (np.ndim(selected) and len(selected) and
                                     isinstance(np.asarray(selected).tolist()[0], str)):
        wanted = [selected] if isinstance(selected, str) else list(selected)
        known = [str(n) for n in names] if names is not None else []
        return [known.index(name) for name in wanted]
    return np.arange(width)[selected]


def _saved_baseline(model_dir: str | None, names: Sequence[str] | None,
                    width: int) -> Any:
    """The baseline row saved beside the model, as one row of the model's input; ``None``
    when there is no file."""
    path = os.path.join(model_dir, BASELINE_FILE) if model_dir else ""
    if not (path and os.path.isfile(path)):
        return None
    with open(path, encoding="utf-8") as file:
        saved = json.load(file)
    if isinstance(saved, dict) and names is not None:
        missing = [name for name in names if name not in saved]
        if missing:
            raise TypeError(f"{path} has no value for column(s) {missing}")
        return {name: [saved[name]] for name in names}
    row = np.asarray(saved, dtype=np.float64) if isinstance(saved, list) else None
    if row is None or row.shape != (width,) or not np.isfinite(row).all():
        raise TypeError(f"{path} must hold {width} finite numbers, one per feature")
    return row[np.newaxis, :]


def _agrees(linear: Any, method: str, coef: Tensor) -> bool:
    """The linear step's own raw output on zero and on each unit row is the sum, to
    float64 rounding."""
    width = coef.shape[1]
    probes = np.vstack([np.zeros(width), np.eye(width)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fitted with column names; a probe far from the data
        try:
            own = np.asarray(getattr(linear, method)(probes), dtype=np.float64)
        except (ValueError, TypeError, FloatingPointError):
            return False
    expected = probes @ coef.T + np.asarray(linear.intercept_, dtype=np.float64)
    own = own.reshape(expected.shape[0], -1)
    if own.shape != expected.shape or not np.isfinite(own).all():
        return False
    scale = max(1.0, float(np.abs(expected).max()))
    return bool(np.abs(own - expected).max() <= AGREEMENT * scale)
