"""Rows of JSON numbers -> one float64 matrix, and a matrix read as named columns.

A table of numbers (MLflow's ``dataframe_split`` and ``dataframe_records``, rows of one value
per column) is usually nothing but numbers. :func:`number_rows` reads such rows into one
matrix at C speed, and :class:`ColumnMatrix` hands that matrix on as the named columns
every predictor takes, so a plugin that takes the rows whole (:func:`matrix_of`) reads the
matrix instead of stacking the columns again.

These are accelerators: they answer only when the result is certainly what the per-column
decoders (:mod:`.rows`) make of the same values, and ``None`` otherwise (text, ``null``,
booleans, ragged or nested rows, numbers from 2**53 on), which leaves the request to those
decoders and their errors.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..types import Tensor
from .arrays import has_booleans
from .dtypes import FLOAT64
from .json_tensor import LOSSLESS

EXACT = LOSSLESS["FP64"]
"""The largest magnitude taken: from 2**53 on, an integer's rounding is the decoders' call."""


def number_rows(rows: Any) -> Tensor | None:
    """*rows*, a non-empty list of lists of one length holding only JSON numbers (``int``
    or ``float``, never ``bool``), as a C-contiguous float64 matrix of one row each; ``None``
    for anything else.

    numpy finds the type of the values: text makes strings, ``null`` or an object makes
    objects, a ragged row fails. A boolean among numbers reads as 0 or 1 there, so only a
    matrix holding a 0 or a 1 is searched for ``true`` and ``false``.
    """
    if type(rows) is not list or not rows or type(rows[0]) is not list or not rows[0]:
        return None
    try:
        matrix = np.array(rows)
    except (ValueError, TypeError, OverflowError):  # ragged or nested rows
        return None
    if matrix.ndim != 2 or matrix.dtype.kind not in "iuf":
        return None
    if matrix.dtype.kind == "f":
        if not float(np.abs(matrix).max()) <= EXACT:  # NaN, infinity, past 2**53
            return None
    elif max(int(matrix.max()), -int(matrix.min())) > EXACT:
        return None
    if ((matrix == 0) | (matrix == 1)).any() and has_booleans(rows):
        return None
    return matrix.astype(FLOAT64, copy=False)


class ColumnMatrix(dict[str, Tensor]):
    """Named columns that are the columns of one 2-D :attr:`matrix`: a dict of views
    (``name -> matrix[:, i]``), read as any other inputs are.

    A plugin that takes the rows whole asks :func:`matrix_of` for the matrix; once the dict
    is changed (a column replaced, added or removed), it answers ``None`` and the plugin
    reads the columns.
    """

    def __init__(self, names: Sequence[str], matrix: Tensor) -> None:
        super().__init__((name, matrix[:, index]) for index, name in enumerate(names))
        self.matrix = matrix
        """The rows, one column per name, in the names' order."""
        self.views = tuple(self.values())
        """The columns as made, to tell an unchanged dict."""


def matrix_of(inputs: Any, names: Sequence[str]) -> Tensor | None:
    """The matrix behind *inputs* when they are an unchanged :class:`ColumnMatrix` of
    exactly the columns *names*, in that order; else ``None``."""
    if not isinstance(inputs, ColumnMatrix) or tuple(inputs) != tuple(names):
        return None
    if not all(map(operator.is_, inputs.values(), inputs.views)):
        return None
    return inputs.matrix


def named_rows(columns: Sequence[str], rows: Any, wanted: Sequence[str]) -> ColumnMatrix | None:
    """The columns *wanted* (in that order) of a table whose *rows* hold one number for each
    of *columns*: a :class:`ColumnMatrix`, or ``None`` where :func:`number_rows` refuses the
    rows or a wanted column is not among *columns* (extra columns are dropped)."""
    place = {name: index for index, name in enumerate(columns)}
    try:
        order = [place[name] for name in wanted]
    except KeyError:
        return None
    matrix = number_rows(rows)
    if matrix is None or matrix.shape[1] != len(columns):
        return None
    if order != list(range(len(columns))):
        matrix = matrix[:, order]
    return ColumnMatrix(wanted, matrix)
