"""A request's columns as the pandas DataFrame a model fitted on one takes, and the model's
methods on it.

Numbers are float64 columns (NaN where missing), text stays text (pandas' string dtype),
and the columns a model was fitted on as pandas categories are categories with the model's
categories. A plain Pipeline runs its transformers once for every output asked for, then
its last step's methods: what ``Pipeline.predict`` and ``predict_proba`` each do.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from flask_predict.plugin import Tensor

from .columns import Layout


def to_frame(columns: Mapping[str, Tensor], layout: Layout) -> Any:
    """The DataFrame of *columns* (checked 1-D arrays, in the model's order), or for a
    model that takes text, its one column of text."""
    if layout.text:
        (texts,) = columns.values()
        return texts
    data = {}
    for column in layout.columns:
        values = columns[column.name]
        known = column.categories
        if column.name in layout.pandas_categories and known:
            # a value the model does not know is missing, as the model itself reads it
            data[column.name] = pd.Categorical(
                [value if value in known else None for value in values.tolist()],
                categories=list(known))
        else:
            data[column.name] = values
    return pd.DataFrame(data)


def number_frame(matrix: Tensor, names: Sequence[str]) -> Any:
    """The DataFrame of a float64 *matrix*, one column per name: one block, where
    :func:`to_frame` builds it column by column. Its values reach a model as they are,
    in the same memory order (a Fortran-ordered matrix is what pandas keeps anyway)."""
    return pd.DataFrame(matrix, columns=list(names), copy=False)


def run_methods(model: Any, data: Any, methods: Sequence[str]) -> dict[str, Tensor]:
    """``getattr(model, method)(data)`` for each of *methods*; a plain Pipeline's
    transformers run once for them all."""
    from sklearn.pipeline import Pipeline

    final = model
    if type(model) is Pipeline:
        for _, step in model.steps[:-1]:
            if step not in (None, "passthrough"):
                data = step.transform(data)
        final = model.steps[-1][1]
    return {method: np.asarray(getattr(final, method)(data)) for method in methods}
