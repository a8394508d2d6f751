"""tf.Example features -> feature rows or a table's columns: classify and regress on
non-TensorFlow models."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InvalidInput
from ..types import Tensor


def examples_to_rows(examples: Sequence[Mapping[str, Tensor]],
                     feature_names: Sequence[str] | None) -> Tensor:
    """A float64 ``[N, features]`` batch from examples (feature name -> 1-D array).

    With *feature_names* each example holds one number per named feature (a missing feature
    is NaN); without, each example must hold exactly one feature: the whole row as a list.
    """
    rows: list[Any] = []
    for index, example in enumerate(examples):
        if feature_names:
            unknown = [name for name in example if name not in feature_names]
            if unknown:
                raise InvalidInput(f"example {index}: unknown feature(s) {unknown}; the "
                                   f"model's features are {list(feature_names)}")
            row = []
            for name in feature_names:
                value = example.get(name)
                if value is None:
                    row.append(math.nan)
                    continue
                if value.size != 1 or value.dtype.kind not in "biuf":
                    raise InvalidInput(f"example {index}: feature {name!r} must be one number")
                row.append(float(value[0]))
            rows.append(row)
        else:
            if len(example) != 1:
                raise InvalidInput(f"example {index}: the model has no feature names, so "
                                   "each example needs exactly one feature holding the "
                                   "whole row of numbers")
            (value,) = example.values()
            if value.dtype.kind not in "biuf":
                raise InvalidInput(f"example {index}: features must be numbers")
            rows.append(value)
    try:
        return np.asarray(rows, dtype=np.float64)
    except ValueError:
        raise InvalidInput("examples hold rows of different lengths")


def examples_to_columns(examples: Sequence[Mapping[str, Tensor]],
                        names: Sequence[str]) -> dict[str, Tensor]:
    """One object array per column of a tabular model: each example's one value of the
    feature named after the column (``None`` where the example lacks it), as a Python
    number or bytes."""
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for index, example in enumerate(examples):
        unknown = [name for name in example if name not in columns]
        if unknown:
            raise InvalidInput(f"example {index}: unknown feature(s) {unknown}; the model's "
                               f"columns are {list(names)}")
        for name, values in columns.items():
            value = example.get(name)
            if value is not None and value.size != 1:
                raise InvalidInput(f"example {index}: feature {name!r} must hold one value")
            values.append(None if value is None else value.reshape(-1).tolist()[0])
    arrays = {}
    for name, values in columns.items():
        arrays[name] = np.empty(len(values), dtype=object)
        arrays[name][:] = values
    return arrays
