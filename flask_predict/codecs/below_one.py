"""float64 values between 1e-4 and 1 (probabilities, scores) printed as ``WriteDecimal``
prints them, in fewer numpy calls than :func:`digits.float_cells` takes for any layout.

Such a value's ``%.17g`` text is ``0.`` and up to three zeros, then its 17 significant
digits with trailing zeros cut (or ``%g``'s six, when they read back):

1. ``searchsorted`` finds each value's decade exactly: the doubles 1e-4, 0.001, 0.01 and
   0.1 each lie just above their power of ten;
2. one long double product scales it to 17 digits. The product is exact but for one
   rounding of at most half a unit in its last place, and its distance to the nearest
   integer is a whole number of such units: a distance under one half decides the digits,
   a distance of one half (a tie, or too near one) leaves the value to the caller;
3. orjson prints the integers (a grid of 17 digits and a comma); each goes in a line of
   bytes after its lead, the NULs that pad the leads are dropped and the text is split.

A few values of another layout (none in a probability, or a few: 0, 1; at most
:data:`digits.FEW_OTHERS`) and the ties are printed by the rule. Instructions counted for
random probabilities against :func:`digits.print_floats`: 0.81x for 200 values, 0.87x for
1,000, 1.00x for 10,000 (as cells); as texts (split, against its cells joined and split),
0.87x, 0.92x and 1.00x. From 65 values on, it costs less than the rule value by value.
"""

from __future__ import annotations

import numpy as np
import orjson

from ..types import Tensor
from .digits import BLOCK, CELL, FEW_OTHERS, six_digits, write_decimal

_DECADES = np.array([1e-4, 1e-3, 1e-2, 1e-1, 1.0])
"""Where each decade starts: ``searchsorted`` answers 1 (1e-4 up to 0.001) to 4 (0.1 up to
1); 0 for smaller values and zero, 5 for one and over, infinities and NaN."""
_SCALES = np.array([1] + [10 ** (21 - decade) for decade in range(1, 5)] + [1],
                   dtype=np.longdouble)
"""By decade: the power of ten that gives its values 17 digits (exact in a long double)."""
_NO_INDICES = np.zeros(0, dtype=np.intp)
_NO_INDICES.flags.writeable = False
_LEADS = np.frombuffer(b"".join(b"\0" + b"0." + b"0" * (4 - decade) + b"\0" * (decade - 1)
                                for decade in (4, 1, 2, 3, 4, 4)), dtype=np.uint8).reshape(6, 6)
"""By decade, what comes before the digits: a place for the sign, ``0.`` and zeros (three
for 1e-4 up to 0.001, none for 0.1 up to 1), NUL-padded."""


def fraction_texts(values: Tensor) -> list[str] | None:
    """Each float64 value's text, as :func:`digits.write_decimal` prints it; ``None`` as
    :func:`fraction_grid` answers it."""
    found = fraction_grid(values, comma=True)
    if found is None:
        return None
    grid, left = found
    texts = grid.tobytes().translate(None, b"\0").decode("ascii").split(",")
    texts.pop()
    for index, value in zip(left.tolist(), values[left].tolist()):
        texts[index] = write_decimal(value, False)
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
    """One line of 25 bytes per float64 value (and a comma after it): its text where it
    is between 1e-4 and 1 in magnitude, padded with NULs before and after its digits; and
    the indices of the values whose line is left to the caller: those not in that range
    and ties at their 17th digit. ``None`` when more than :data:`digits.FEW_OTHERS` values
    are not in that range, when the first and the last are not below one, or past
    :data:`digits.BLOCK` values (printed a block at a time elsewhere)."""
    count = values.size
    if not count:
        return np.zeros((0, 26 if comma else 25), dtype=np.uint8), _NO_INDICES
    if count > BLOCK:
        return None
    if not (abs(values[0]) < 1 or abs(values[-1]) < 1):  # a regression's outputs: no
        return None  # numpy calls spent on them (about 12 us for 100 values)
    magnitude = np.abs(values)
    decade = np.searchsorted(_DECADES, magnitude, side="right")
    left = _NO_INDICES
    if not (decade % 5).all():
        left = np.flatnonzero(decade % 5 == 0)
        if left.size > FEW_OTHERS:
            return None
        magnitude[left] = 0.123456789  # in range, far from six digits: the rule prints them
        decade[left] = 4
    scaled = np.multiply(magnitude, _SCALES[decade], dtype=np.longdouble)
    rounded = np.rint(scaled)
    distance = np.abs(scaled - rounded)
    if distance.max() == 0.5:  # ties: the rule prints them on every path
        left = np.union1d(left, np.flatnonzero(distance == 0.5))
    digits = rounded.astype(np.int64)  # 10**16 up to 10**17: the decade is exact
    if ((digits + 16) % 10 ** 11 < 32).any():  # %g's six digits may read back
        exponent = decade - 5
        six_digits(digits, exponent, np.ones(count, dtype=bool), magnitude, False)
        decade = exponent + 5  # a decade up where they round up to it (0.1 from 0.0999)
    text = orjson.dumps(digits, option=orjson.OPT_SERIALIZE_NUMPY)
    grid = np.zeros((count, 26 if comma else 25), dtype=np.uint8)
    if comma:
        grid[:, -1] = ord(",")
    grid[:, :6] = _LEADS[decade]
    grid[:, 6:23] = np.frombuffer(text, dtype=np.uint8, offset=1).reshape(count, 18)[:, :17]
    negative = np.signbit(values)
    if negative.any():
        grid[negative, 0] = ord("-")
    ends = np.flatnonzero(grid[:, 22] == ord("0"))
    if ends.size:  # trailing zeros: NULs
        stripped = np.strings.rstrip(grid[ends, 6:23].copy().view("S17").ravel(), b"0")
        grid[ends, 6:23] = stripped.astype("S17").view(np.uint8).reshape(ends.size, 17)
    return grid, left

