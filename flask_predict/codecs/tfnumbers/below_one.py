"""float64 values between 1e-11 and 1 (probabilities, scores) printed as ``WriteDecimal``
prints them, in fewer numpy calls than :func:`digits.float_cells` takes for any layout.

Such a value's ``%.17g`` text is its 17 significant digits with trailing zeros cut (or
``%g``'s six, when they read back), after ``0.`` and up to three zeros from 1e-4 up, or
with a point after the first and an exponent (``e-05`` to ``e-11``) below 1e-4:

1. ``searchsorted`` finds each value's decade exactly: each bound is the smallest double
   at or above its power of ten;
2. one long double product scales it to 17 digits (by 10**17 up to 10**27, each exact).
   The product is exact but for one rounding of at most half a unit in its last place,
   and its distance to the nearest integer is a whole number of such units: a distance
   under one half decides the digits, a distance of one half (a tie, or too near one)
   leaves the value to the caller;
3. orjson prints the integers (a grid of 17 digits and a comma); each goes in a line of
   bytes after its lead (the first digit and the point moved to the front of the line,
   the exponent after the digits, below 1e-4); the NULs that pad the lines and replace
   trailing zeros are dropped, and the text is split.

A few values of another layout (none in a probability, or a few: 0, 1, under 1e-11; at
most :data:`digits.FEW_OTHERS`) and the ties are printed by the rule. Instructions counted
for random probabilities against :func:`digits.print_floats`: 0.64x for 200 values, 0.66x
for 1,000, 0.63x for 10,000 (as cells); as texts (split, against its cells joined and
split), 0.71x, 0.79x and 0.77x. From 65 values on, it costs less than the rule value by
value.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import orjson

from ...types import Tensor
from .digits import BLOCK, CELL, FEW_OTHERS, FIXED_FROM, LOWEST, six_digits, write_decimal

_LOWEST = LOWEST[17]
"""The lowest exponent printed here, as in :mod:`digits`: its 17 digits need 10**27."""


def _bound(exponent: int) -> float:
    """The smallest double at or above 10**exponent."""
    power = Fraction(10) ** exponent
    bound = float(power)
    return bound if Fraction(bound) >= power else float(np.nextafter(bound, 1.0))


_EXPONENTS = range(_LOWEST, 0)
_DECADES = np.array([_bound(exponent) for exponent in [*_EXPONENTS, 0]])
"""Where each decade starts: ``searchsorted`` answers 1 (1e-11 up to 1e-10) to 11 (0.1 up
to 1), a value's exponent plus :data:`_ONE`; 0 for smaller values and zero, 12 for one and
over, infinities and NaN."""
_ONE = len(_EXPONENTS) + 1
"""The decade of values from one up (and of NaN)."""
_SCALES = np.array([1] + [10 ** (16 - exponent) for exponent in _EXPONENTS] + [1],
                   dtype=np.longdouble)
"""By decade: the power of ten that gives its values 17 digits (exact in a long double)."""
_OTHER = np.array([True] + [False] * len(_EXPONENTS) + [True])
"""By decade: whether a value is not between 1e-11 and 1 in magnitude."""
_LEADS = np.array([b"\0" * 6] + [b"\0" * 6 if exponent < FIXED_FROM
                                 else b"\0" + b"0." + b"0" * (-1 - exponent)
                                 for exponent in _EXPONENTS] + [b"\0" * 6], dtype="S6")
"""By decade, what comes before the digits: a place for the sign, then ``0.`` and zeros
(three for 1e-4 up to 0.001, none for 0.1 up to 1), NUL-padded; only the sign's place
where the first digit and the point move in."""
_TAILS = np.array([b"e%+03d" % max(exponent, _LOWEST) for exponent in range(_LOWEST - 1, 1)],
                  dtype="S4")
"""By decade: the exponent of a value written with one (``e-05`` to ``e-11``)."""
_LINES = {True: np.dtype([("lead", "S6"), ("digits", "S17"), ("comma", "S1")]),
          False: np.dtype([("lead", "S6"), ("digits", "S17"), ("pad", "S2")])}
"""A value's line, with a comma after it or as a :data:`digits.CELL`: each field is filled
by one copy of a table or of orjson's text."""
_ZERO = np.uint8(ord("0"))
_ROW_END_TEXT = ";"
_ROW_END = ord(_ROW_END_TEXT)
"""What ends a row in :func:`fraction_rows`' text before it is split (no number has it)."""
_POINT = ord(".")


def fraction_texts(values: Tensor) -> list[str] | None:
    """Each float64 value's text, as :func:`digits.write_decimal` prints it; ``None`` as
    :func:`fraction_grid` answers it."""
    return _joined_texts(values, 1)


def fraction_rows(values: Tensor) -> list[str] | None:
    """Each row of 2-D float64 *values* as its values' texts joined by commas (``[%s]`` of a
    row template takes it whole: a string per row, not per value); ``None`` as
    :func:`fraction_grid` answers it."""
    rows, width = values.shape
    if not values.size:
        return [""] * rows
    return _joined_texts(values.ravel(), width)


def _joined_texts(flat: Tensor, width: int) -> list[str] | None:
    """The texts of *flat*'s values, *width* of them joined by commas in each (split where
    a row's last comma stood), the values the grid leaves printed by the rule."""
    found = fraction_grid(flat, comma=True)
    if found is None:
        return None
    grid, left = found
    end = ","
    if width > 1:
        grid.reshape(-1, width * grid.shape[1])[:, -1] = _ROW_END  # each row's last comma
        end = _ROW_END_TEXT
    texts = grid.tobytes().translate(None, b"\0").decode("ascii").split(end)
    texts.pop()
    for index, value in zip(left.tolist(), flat[left].tolist()):
        row, column = divmod(index, width)
        parts = texts[row].split(",")
        parts[column] = write_decimal(value, False)
        texts[row] = ",".join(parts)
    return texts


def fraction_cells(values: Tensor) -> Tensor | None:
    """Each float64 value's text as a :data:`digits.CELL`, NULs anywhere in it (where
    NULs are dropped afterwards, as :func:`cells.lines_text` does); ``None`` as
    :func:`fraction_grid` answers it."""
    found = fraction_grid(values, comma=False)
    if found is None:
        return None
    grid, left = found
    cells = grid.view(CELL).ravel()
    if left.size:
        cells[left] = [write_decimal(value, False).encode("ascii")
                       for value in values[left].tolist()]
    return cells


def fraction_grid(values: Tensor, comma: bool) -> tuple[Tensor, Tensor] | None:
    """One line of 25 bytes per float64 value (24 with a comma after it): its text where it
    is between 1e-11 and 1 in magnitude, padded with NULs before and after its digits; and
    the indices of the values whose line is left to the caller: those not in that range
    and ties at their 17th digit. ``None`` when more than :data:`digits.FEW_OTHERS` values
    are not in that range, when the first and the last are not below one, or past
    :data:`digits.BLOCK` values (printed a block at a time elsewhere)."""
    count = values.size
    if not count:
        return np.zeros((0, _LINES[comma].itemsize), dtype=np.uint8), np.zeros(0, np.intp)
    if count > BLOCK:
        return None
    if not (abs(values[0]) < 1 or abs(values[-1]) < 1):  # a regression's outputs: no
        return None  # numpy calls spent on them (about 12 us for 100 values)
    magnitude = np.abs(values)
    decade = np.searchsorted(_DECADES, magnitude, side="right")
    other = _OTHER.take(decade)
    if other.any():
        left = other.nonzero()[0]
        if left.size > FEW_OTHERS:
            return None
        magnitude[left] = 0.123456789  # in range, far from six digits: the rule prints them
        decade[left] = _ONE - 1
    scaled = np.multiply(magnitude, _SCALES[decade], dtype=np.longdouble)
    rounded = np.rint(scaled)
    distance = np.abs(scaled - rounded)
    if distance.max() == 0.5:  # ties: the rule prints them on every path
        other |= distance == 0.5
    digits = rounded.astype(np.int64)  # 10**16 up to 10**17: the decade is exact
    if ((digits + 16) % 10 ** 11 < 32).any():  # %g's six digits may read back
        exponent = decade - _ONE
        six_digits(digits, exponent, np.ones(count, dtype=bool), magnitude, False)
        decade = exponent + _ONE  # a decade up where they round up to it (0.1 from 0.0999)
    text = orjson.dumps(digits, option=orjson.OPT_SERIALIZE_NUMPY)
    lines = np.empty(count, dtype=_LINES[comma])
    lines["lead"] = _LEADS.take(decade)
    lines["digits"] = np.frombuffer(text, dtype="S18", count=count, offset=1)  # comma cut
    if comma:
        lines["comma"] = b","
    else:
        lines["pad"] = b""
    grid = lines.view(np.uint8).reshape(count, -1)
    negative = np.signbit(values)
    if negative.any():
        grid[negative, 0] = ord("-")
    ends = (grid[:, 22] == _ZERO).nonzero()[0]
    if ends.size:  # trailing zeros: NULs
        field = lines["digits"]
        field[ends] = np.strings.rstrip(field[ends], b"0")
    written = (decade < _ONE + FIXED_FROM).nonzero()[0]
    if written.size:
        _with_exponent(grid, written, decade[written])
    return grid, other.nonzero()[0]


def _with_exponent(grid: Tensor, rows: Tensor, decade: Tensor) -> None:
    """Lines *rows* of *grid* (digits after the lead) rewritten as ``d.ddd`` and the exponent
    of their *decade*: the first digit and the point move to the lead's place, the rest of
    the digits follow them, a point with no digits after it is dropped."""
    lines = grid[rows]
    lines[:, 1] = lines[:, 6]
    lines[:, 2] = _POINT
    lines[:, 3:19] = lines[:, 7:23]
    lines[:, 19:23] = _TAILS.take(decade).view(np.uint8).reshape(rows.size, 4)
    lines[lines[:, 3] == 0, 2] = 0
    grid[rows] = lines

