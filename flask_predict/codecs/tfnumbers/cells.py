"""TF Serving's JSON of numeric arrays, laid out in numpy: no Python string per number.

Each number's text is a fixed-width cell (bytes padded with NULs, :func:`number_cells`). A
response is a grid with one line per row (the constant text between the numbers broadcast
down its columns); one ``bytes.translate`` drops the padding. For arrays of a few hundred
numbers on, this costs less than formatting each number in Python and joining the strings
(``printing.array_text``, which small arrays, deeper nesting and strings still take).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import orjson

from ...types import Tensor
from ..dtypes import FLOAT32, FLOAT64, FLOATS
from . import digits
from .below_one import fraction_cells
from .digits import CELL, print_floats

GRID_FROM = 512
"""From this many numbers in an answer on, it is laid out here."""
_NUL = b"\0"
_INT_LIMIT = 10 ** 18
"""Integers are printed with an offset of 10**18 that keeps every text 19 digits long (a
grid); larger ones (rare in outputs) leave the answer to the string path."""


def number_cells(array: Tensor) -> Tensor | None:
    """Each element of *array* (flattened) as TF Serving prints it, one cell each, cells
    trimmed to the longest text (a float64 fraction's holds NULs inside it too, which
    :func:`lines_text` drops with the padding); ``None`` for a type this does not print
    (strings, objects, float16, integers past 10**18)."""
    values = array.ravel()
    if not values.size:
        return np.zeros(0, dtype="S1") if array.dtype.kind in "biuf" else None
    if array.dtype == FLOAT64:
        fractions = fraction_cells(values)  # NULs inside a cell: lines_text drops them
        cells = print_floats(values, False) if fractions is None else fractions
    elif array.dtype in FLOATS:
        cells = print_floats(values, array.dtype == FLOAT32)
    elif array.dtype.kind == "b":
        cells = np.where(values, b"true", b"false").astype(CELL)
    elif array.dtype.kind in "iu" and values.min() >= 0 and values.max() <= 9:
        cells = (values.astype(np.uint8) + ord("0")).view("S1")  # class labels: one digit
    elif array.dtype.kind in "iu":
        if not (np.abs(values.astype(np.float64)) < _INT_LIMIT).all():
            return None
        cells = _integer_cells(values.astype(np.int64))
    else:
        return None
    return cells.astype(f"S{max(int(np.strings.str_len(cells).max()), 1)}")


def _integer_cells(values: Tensor) -> Tensor:
    """Integers below 10**18 in magnitude: printed with 10**18 added (19 digits each, one
    orjson print read as a grid), the leading 1 and zeros cut, the sign put back."""
    text = orjson.dumps(np.abs(values) + _INT_LIMIT, option=orjson.OPT_SERIALIZE_NUMPY)
    grid = np.frombuffer(text, dtype=np.uint8, offset=1).reshape(values.size, 20)
    digits = np.strings.lstrip(grid[:, 1:19].copy().view("S18").ravel(), b"0")
    digits[digits == b""] = b"0"
    cells = digits.astype(CELL)
    negative = values < 0
    if negative.any():
        cells[negative] = np.strings.add(b"-", cells[negative])
    return cells


def block(array: Tensor) -> Tensor | None:
    """*array*'s rows as a grid, one line per row of its first dimension: a number per
    line (1-D), or a JSON list of numbers (2-D). ``None`` for what :func:`number_cells`
    does not print, or more dimensions."""
    if array.ndim not in (1, 2) or not digits.VECTORISED:
        return None
    cells = number_cells(array)
    if cells is None:
        return None
    rows = array.shape[0]
    width = cells.dtype.itemsize
    grid = cells.view(np.uint8).reshape(rows, -1, width)
    if array.ndim == 1:
        return grid.reshape(rows, width)
    if array.shape[1] == 0:
        return np.broadcast_to(np.frombuffer(b"[]", dtype=np.uint8), (rows, 2))
    line = np.empty((rows, 1 + array.shape[1] * (width + 1)), dtype=np.uint8)
    line[:, 0] = ord("[")
    numbers = line[:, 1:].reshape(rows, array.shape[1], width + 1)
    numbers[:, :, :width] = grid
    numbers[:, :, width] = ord(",")
    numbers[:, -1, width] = ord("]")
    return line


def lines_text(parts: Sequence[bytes | Tensor], rows: int) -> bytes:
    """The lines of *rows* rows side by side, each part a constant text or a grid of one
    line per row, lines joined by commas in a JSON list, padding dropped."""
    if not rows:
        return b"[]"
    widths = [len(part) if isinstance(part, bytes) else part.shape[1] for part in parts]
    width = sum(widths) + 1
    text = np.empty(1 + rows * width, dtype=np.uint8)  # "[", then the lines
    text[0] = ord("[")
    grid = text[1:].reshape(rows, width)
    start = 0
    for part, part_width in zip(parts, widths):
        grid[:, start:start + part_width] = (np.frombuffer(part, dtype=np.uint8)
                                             if isinstance(part, bytes) else part)
        start += part_width
    grid[:, -1] = ord(",")
    grid[-1, -1] = ord("]")
    return text.tobytes().translate(None, _NUL)
