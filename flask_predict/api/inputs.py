"""What callers hold -> a model's named inputs: a pandas DataFrame by column name, a numpy
array, a mapping of arrays. pandas is never imported here: a frame is recognised only when
the caller's process has imported pandas already.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

import numpy as np

from ..errors import InvalidInput
from ..types import Signature, Tensor

ROWS = "rows"
"""The name a matrix of rows goes by for a model that takes a table's columns: not one of
its columns, so the columns are split from it by position (:func:`tabular.read_columns`)."""


def is_frame(data: Any) -> bool:
    """Whether *data* is a pandas DataFrame."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(data, pandas.DataFrame)


def named_inputs(data: Any, signature: Signature, instances_door: bool) -> dict[str, Tensor]:
    """*data* as the named arrays the tensor door takes, as a V2 request would carry them.

    A DataFrame with named columns, for a model fitted on named columns or whose columns
    are the model's inputs (a TensorFlow signature's, an MLflow signature's), gives one
    array per column (checked against the model's, by name). Any other frame (its columns numbered
    0, 1, ...; a model without named columns), like a numpy array, is a matrix of rows for
    the model's one input (a table's columns split by position; a custom routine's
    instances, one list per row).

    :raises TypeError: *data* is none of a DataFrame, a numpy array or a mapping.
    :raises InvalidInput: a matrix for a model with several inputs that are not a table.
    """
    if isinstance(data, Mapping):
        return {str(name): np.asarray(value) for name, value in data.items()}
    names = [spec.name for spec in signature.inputs]
    if is_frame(data):
        labelled = not all(isinstance(name, (int, np.integer)) for name in data.columns)
        by_name = signature.tabular or {str(name) for name in data.columns} == set(names)
        if labelled and by_name and (signature.tabular or not instances_door):
            return {str(name): column_values(data[name]) for name in data.columns}
        matrix = frame_matrix(data)
    elif isinstance(data, np.ndarray):
        matrix = data
    else:
        raise TypeError(f"cannot predict on {type(data).__name__}: give a pandas DataFrame, a "
                        "numpy array or a mapping of input names to arrays (or use "
                        "predict_instances for a list of instances)")
    if signature.tabular:
        return {ROWS: matrix}
    if len(names) != 1:
        raise InvalidInput(f"the model takes {len(names)} inputs {names}: give a DataFrame "
                           "with those columns or a mapping of them")
    return {names[0]: matrix}


def column_values(series: Any) -> Tensor:
    """One DataFrame column as a 1-D array, as JSON would carry it: numbers as numbers (NaN
    where missing), anything else (text, categories, nullable types) as Python objects,
    ``None`` where missing."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        values: Tensor = series.to_numpy()
        return values
    if getattr(dtype, "kind", "-") in "iuf" and hasattr(dtype, "na_value"):  # Int64, Float64
        floats: Tensor = series.to_numpy(dtype=np.float64, na_value=np.nan)
        return floats
    objects: Tensor = np.array(series.astype(object).to_numpy(dtype=object), dtype=object)
    missing = series.isna().to_numpy()
    if missing.any():
        objects[missing] = None
    return objects


def frame_matrix(frame: Any) -> Tensor:
    """A frame's rows as one matrix: numbers when every column holds numbers, else Python
    objects (``None`` where missing)."""
    if all(isinstance(dtype, np.dtype) and dtype.kind in "biuf" for dtype in frame.dtypes):
        matrix: Tensor = frame.to_numpy()
        return matrix
    columns = [column_values(frame[name]) for name in frame.columns]
    out = np.empty((len(frame), len(columns)), dtype=object)
    for index, values in enumerate(columns):
        out[:, index] = values
    return out


def frame_rows(frame: Any) -> list[list[Any]]:
    """A frame's rows as JSON instances: one list of plain values per row."""
    rows: list[list[Any]] = frame_matrix(frame).tolist()
    return rows
