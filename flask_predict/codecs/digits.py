"""Many floats printed as C's ``%.17g`` prints them, at numpy speed.

Python formats a double with 17 significant digits in about 0.5 us (a correctly rounded
``dtoa``), most of a TF Serving response of 10,000 rows of probabilities.
:func:`significant_texts` computes the same digits for a whole array: each value is scaled by
an exact power of ten in long double (64 bits of mantissa), rounded to an integer of
*digits* digits, and the digits are laid out as ``%g`` lays them out (fixed notation from
1e-4 up to 10**digits, trailing zeros cut). A value whose scaled product falls too near a
rounding midpoint for its 64 bits to decide (about 3% of random doubles), or that needs an
exponent, is left to the caller's ``%``; every text answered here equals ``%``'s.
"""

from __future__ import annotations

import numpy as np

from ..types import Tensor

EXACT = np.finfo(np.longdouble).nmant >= 63
"""Long double has the 64-bit mantissa the error bound needs (x86's extended precision,
or quad); elsewhere (where it is a double) every value is left to ``%``."""

_POWERS = np.cumprod(np.array([1] + [10] * 27, dtype=np.longdouble))
"""10**0..10**27, exact in a 64-bit mantissa (5**27 < 2**64)."""
_MARGIN = 2.0 ** -6
"""How near a rounding midpoint a scaled value may fall: its error is at most
10**17 * 2**-64 (about 0.0054) of a unit in the last digit."""
_QUADS = np.array([b"%04d" % i for i in range(10000)]).view(np.uint32)
"""Four digits' text for each of 0..9999, as one 32-bit word."""
_ZERO, _POINT, _NOTHING = ord("0"), ord("."), 0
_LOWEST = -4
"""``%g`` writes exponents from -4 up to (not including) its precision without ``e``."""


def significant_texts(values: Tensor, digits: int) -> tuple[list[str], Tensor]:
    """``"%.<digits>g" % v`` for finite, non-zero float64 *values* that are not whole
    numbers, and the indices (into *values*) of those left to the caller (their entry in
    the list is then empty)."""
    count = values.size
    magnitude = np.abs(values)
    with np.errstate(all="ignore"):
        exponent = np.floor(np.log10(magnitude)).astype(np.int64)
        usable = (exponent >= _LOWEST) & (exponent < digits) & (magnitude > 0)
        if not EXACT:
            usable[:] = False
        exponent[~usable] = 0
        scaled = magnitude.astype(np.longdouble) * _POWERS[digits - 1 - exponent]
        whole = scaled.astype(np.int64)  # below 10**digits: exact
        fraction = (scaled - whole).astype(np.float64)
    rounded = whole + (fraction > 0.5)
    usable &= (np.abs(fraction - 0.5) >= _MARGIN) & (rounded >= 10 ** (digits - 1)) & (
        rounded < 10 ** digits)
    rounded[~usable] = 10 ** (digits - 1)
    text = _digit_text(rounded, digits)  # (count, digits) ASCII
    last = digits - 1 - np.argmax(text[:, ::-1] != _ZERO, axis=1)  # last non-zero digit
    usable &= (exponent < 0) | (last > exponent)  # a fraction is written (not a whole number)
    width = digits + 3 - _LOWEST  # sign, "0." and three zeros, the digits, ","
    line = np.zeros((count, width), dtype=np.uint8)
    line[:, 0] = np.where(values < 0, ord("-"), _NOTHING)
    end = np.empty(count, dtype=np.int64)  # the column of the last digit written
    for power in np.flatnonzero(np.bincount(exponent[usable] - _LOWEST)) + _LOWEST:
        rows = np.flatnonzero(usable & (exponent == power))
        if power >= 0:  # d.ddd: the point after digit *power*
            line[rows, 1:power + 2] = text[rows, :power + 1]
            line[rows, power + 2] = _POINT
            line[rows, power + 3:digits + 2] = text[rows, power + 1:]
            end[rows] = last[rows] + 2
        else:  # 0.000ddd
            lead = 1 - power
            line[rows, 1:lead + 1] = _ZERO
            line[rows, 2] = _POINT
            line[rows, lead + 1:lead + 1 + digits] = text[rows]
            end[rows] = last[rows] + lead + 1
    end[~usable] = -1
    line *= np.arange(width) <= end[:, None]  # no trailing zeros (nor unusable rows)
    line[:, -1] = ord(",")
    texts = line.tobytes().translate(None, b"\0").decode("ascii").split(",")
    texts.pop()
    return texts, np.flatnonzero(~usable)


def _digit_text(rounded: Tensor, digits: int) -> Tensor:
    """Each integer of *digits* digits as its ASCII digits, one row each."""
    quads = -(-digits // 4)
    groups = np.empty((rounded.size, quads), dtype=np.int64)
    rest = rounded
    for column in range(quads - 1, -1, -1):
        rest, groups[:, column] = np.divmod(rest, 10000)
    text: Tensor = _QUADS[groups].view(np.uint8).reshape(rounded.size, quads * 4)
    return text[:, quads * 4 - digits:]
