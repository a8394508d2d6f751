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
import simdjson

from ..types import Tensor
from .arrays import has_booleans
from .dtypes import FLOAT64
from .json_tensor import LOSSLESS
from .parsing import SMALL_BODY, simdjson_member
from .scanning import count_byte

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
    if not set(wanted) <= set(columns):
        return None
    matrix = number_rows(rows)
    return None if matrix is None else named_matrix(columns, matrix, wanted)


def named_matrix(columns: Sequence[str], matrix: Tensor, wanted: Sequence[str]
                 ) -> ColumnMatrix | None:
    """:func:`named_rows` for rows already read into *matrix*."""
    place = {name: index for index, name in enumerate(columns)}
    try:
        order = [place[name] for name in wanted]
    except KeyError:
        return None
    if matrix.ndim != 2 or matrix.shape[1] != len(columns):
        return None
    if order != list(range(len(columns))):
        matrix = matrix[:, order]
    return ColumnMatrix(wanted, matrix)


def number_table(body: bytes, key: str) -> tuple[list[str], Tensor] | None:
    """A body that is exactly ``{"<key>": {"columns": [...], "data": [[...], ...]}}`` (the
    two members in either order, nothing else): its column names and the float64 matrix of
    its rows, when the names are distinct strings and every row holds one plain JSON number
    per column (under 2**53); ``None`` for any other body, left to the full parse.

    simdjson reads the numbers straight into one buffer, with no Python object per number
    (:func:`.parsing.number_matrix`'s way, and its checks: an array inside a row or a name
    adds a ``[`` to the body, so the count of them says there is none). A small body is
    left to the full parse: simdjson's set-up costs more than the whole parse there.
    """
    if len(body) <= SMALL_BODY:
        return None
    try:
        table = simdjson_member(body, key)
        if not isinstance(table, simdjson.Object) or sorted(table.keys()) != ["columns",
                                                                               "data"]:
            return None
        names, rows = table["columns"], table["data"]
        if not isinstance(names, simdjson.Array) or not isinstance(rows, simdjson.Array):
            return None
        columns = [name for name in names.as_list() if type(name) is str]
        width, count = len(columns), len(rows)
        if (not width or not count or width != len(names) or len(set(columns)) != width
                or count_byte(body, b"[") != count + 2):
            return None
        if set(map(len, rows)) != {width}:  # type: ignore[arg-type]  # a number: TypeError
            return None
        flat = np.frombuffer(rows.as_buffer(of_type="d"), dtype=np.float64)
    except (ValueError, TypeError, RuntimeError, KeyError, IndexError):
        return None  # bad JSON, NaN tokens, null, booleans or text among the numbers
    if flat.size != count * width or not float(np.abs(flat).max()) <= EXACT:
        return None
    return columns, flat.reshape(count, width)
