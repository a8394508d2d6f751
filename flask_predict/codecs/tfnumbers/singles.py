"""float32 arrays printed as TF Serving's ``WriteDecimal`` prints them, by one orjson print.

A float32 value's text has at most nine significant digits: its ``%g`` (six) when that
reads back as the value, else its ``%.9g``. The double nearest that decimal is printed by
orjson (its shortest text) as exactly that decimal, trailing zeros cut: nine digits are
well within a double's fifteen, so no other decimal of nine digits or fewer reads back as
the same double. Where ``%g`` writes no exponent (from 1e-4 up to the digits shown),
orjson lays the number out the same way, ``.0`` after a whole number included. So the
whole array, nested as it is, is one orjson print of those doubles:

1. each value is scaled to nine digits in float64 and rounded (``rint``, half to even, as
   ``printf`` rounds). From 1e-4 up to 10**9 the product of a float32 and ``10**k`` (k up
   to 12: 24 + 28 bits) is exact. Past that range ``10**k`` is still an exact double (up
   to ``10**22``): the product is rounded once, by at most half a unit in its last place,
   and its distance to an integer is a whole number of such units, so only a distance of
   exactly one half (a tie, or too near one) is left to :func:`digits.write_decimal`, as
   in :mod:`digits`. ``%g``'s six digits are taken where they read back
   (:func:`digits.six_digits`);
2. the values ``%g`` writes with an exponent (``1.82147e-05``) are laid out in numpy and
   written where a sentinel stands in orjson's text; so are the few values left to the
   rule (not finite, or out of the float64 scaling's range).

Every text equals :func:`digits.write_decimal`'s, value by value. That rests on how orjson
lays a float out, which is orjson's own choice: it is checked once, at import, on values
at the ends of that layout and on the sentinels (:data:`LAYOUT_AS_READ`); with another
layout nothing is printed here.
"""

from __future__ import annotations

import numpy as np
import orjson

from ...types import Tensor
from .digits import BLOCK, EXPONENTS, FEW_OTHERS, POWERS, six_digits, write_decimal

_LOW, _HIGH = 10 ** 8, 10 ** 9
"""Nine digits: from 10**8 up to (not including) 10**9."""
_LOWEST, _HIGHEST = -14, 26
"""Decimal exponents scaled here: 10**|8 - e| is then an exact double (at most 10**22), and
:func:`digits.six_digits` can scale six digits back."""
_WIDTH = 15
"""The longest text of a float32 value: ``-1.23456789e-05``."""
_SHORTEST = 5
_SENTINEL_TEXTS = [b"1e+50", b"1e+300", b"-1e+300"] + [b"1." + b"1" * count + b"e+300"
                                                      for count in range(1, 9)]
"""Stand in orjson's text for the values printed elsewhere: one of each length from 5 to
15, each with a ``+``. No value orjson prints here is that large, so a ``+`` is a
sentinel's."""
_SENTINELS = np.array([0.0] * _SHORTEST + [float(text) for text in _SENTINEL_TEXTS])
_PLUS = ord("+")
_FILL = b"\x01"
"""Pads a text the rule gives under five characters (``NaN``) to a sentinel's length."""
_PLUS_AT = np.array([0] * _SHORTEST + [text.index(b"+") for text in _SENTINEL_TEXTS])
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_LAYOUT_PROBES = [(0.0001, "0.0001"), (0.000123456789, "0.000123456789"), (0.5, "0.5"),
                  (-0.5, "-0.5"), (1.0, "1.0"), (123.0, "123.0"), (123456789.0, "123456789.0"),
                  (999999999.0, "999999999.0"), (0.0, "0.0"), (-0.0, "-0.0")]
"""Values at the ends of the fixed layout, and orjson's text for them as this module reads
it."""


def _orjson_lays_out_as_read() -> bool:
    """Whether this orjson prints the probes and the sentinels as this module expects (its
    text of a float is its own, and could change in another release)."""
    probes = np.array([value for value, _ in _LAYOUT_PROBES] + _SENTINELS[_SHORTEST:].tolist())
    expected = ",".join([text for _, text in _LAYOUT_PROBES] +
                        [text.decode("ascii") for text in _SENTINEL_TEXTS])
    return orjson.dumps(probes, option=_NUMPY) == f"[{expected}]".encode("ascii")


LAYOUT_AS_READ = _orjson_lays_out_as_read()
"""Else :func:`single_text` answers ``None`` and the caller prints as before."""


def single_text(array: Tensor) -> bytes | None:
    """*array* (float32, at least one dimension) as TF Serving's JSON text, nested lists of
    its shape; ``None`` when, in a block of about :data:`digits.BLOCK` values, more than
    :data:`digits.FEW_OTHERS` are neither in fixed notation nor in exponent notation from a
    scaled value (the caller then prints it another way), or always when this orjson lays
    numbers out otherwise (:data:`LAYOUT_AS_READ`). Blocks of whole rows keep numpy's
    temporaries a few MiB."""
    if not LAYOUT_AS_READ:
        return None
    rows = max(1, BLOCK // max(1, array[0].size))
    if len(array) <= rows:
        return _block_text(array)
    texts = []
    for start in range(0, len(array), rows):
        text = _block_text(array[start:start + rows])
        if text is None:
            return None
        texts.append(text[1:-1])
    return b"[" + b",".join(texts) + b"]"


def _block_text(array: Tensor) -> bytes | None:
    """:func:`single_text` of one block."""
    with np.errstate(all="ignore"):  # NaN and infinities fail every comparison
        values = np.ravel(array).astype(np.float64)
        magnitude = np.abs(values)
        exponent = np.floor(np.log10(magnitude))
        scaled_here = (exponent >= _LOWEST) & (exponent <= _HIGHEST)
        exponent = np.where(scaled_here, exponent, 0).astype(np.intp)
        scaled = _scale(magnitude, exponent)
        rounded = np.rint(scaled)
        exact = (exponent >= -4) & (exponent <= 8)  # the product is exact: a tie is a tie
        if not exact.all():
            scaled_here &= exact | (np.abs(scaled - rounded) < 0.5)  # see step 1
        digits = rounded.astype(np.int64)
    scaled_here &= (digits >= _LOW) & (digits < _HIGH)
    shown = six_digits(digits, exponent, scaled_here, magnitude, True)
    fixed = scaled_here & (exponent >= -4) & (exponent < shown)
    if not fixed.all():
        fixed |= magnitude == 0  # printed as it is: 0.0 and -0.0
    power = POWERS[np.where(fixed, 8 - exponent, 0)]
    decimals = np.copysign(digits / power, values)
    others = np.flatnonzero(~fixed)
    if not others.size:
        return orjson.dumps(decimals.reshape(array.shape), option=_NUMPY)
    if others.size <= FEW_OTHERS:  # the rule, value by value, costs less than numpy here
        texts = [write_decimal(value, True).encode("ascii").ljust(_SHORTEST, _FILL)
                 for value in values[others].tolist()]
        flat, lengths = b"".join(texts), np.array([len(text) for text in texts])
    else:
        scientific = scaled_here[others]
        ruled = others[~scientific]
        if ruled.size > FEW_OTHERS:
            return None
        rows = np.zeros((others.size, _WIDTH), dtype=np.uint8)
        at = others[scientific]
        rows[scientific] = _scientific(digits[at], exponent[at], np.signbit(values[at]))
        for row, value in zip(np.flatnonzero(~scientific).tolist(), values[ruled].tolist()):
            text = write_decimal(value, True).encode("ascii").ljust(_SHORTEST, _FILL)
            rows[row, :len(text)] = np.frombuffer(text, dtype=np.uint8)
        flat, lengths = rows.tobytes().translate(None, b"\0"), np.count_nonzero(rows, axis=1)
    decimals[others] = _SENTINELS[lengths]
    text = _overwrite(orjson.dumps(decimals.reshape(array.shape), option=_NUMPY), flat, lengths)
    return text.translate(None, _FILL) if _FILL in flat else text


def _overwrite(text: bytes, texts: bytes, lengths: Tensor) -> bytes:
    """*text* with each sentinel overwritten, in order, by the next of the *texts* (laid
    end to end, each of its *lengths*), each sentinel as long as its text. Only a sentinel
    has a ``+`` in it, so numpy finds them all in one pass."""
    buffer = bytearray(text)
    out = np.frombuffer(buffer, dtype=np.uint8)
    starts = np.flatnonzero(out == _PLUS) - _PLUS_AT[lengths]
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)  # where each text lands
    out[shift + np.arange(int(ends[-1]))] = np.frombuffer(texts, dtype=np.uint8)
    return bytes(buffer)


def _scale(magnitude: Tensor, exponent: Tensor) -> Tensor:
    """Each value times 10**(8 - its exponent): nine digits before the point. One
    correctly rounded operation with an exact power of ten (a division by it for values
    of ten digits or more)."""
    shift = 8 - exponent
    scaled: Tensor
    if (shift >= 0).all():
        scaled = magnitude * POWERS[shift]
    else:
        power = POWERS[np.abs(shift)]
        scaled = np.where(shift >= 0, magnitude * power, magnitude / power)
    return scaled


def _scientific(digits: Tensor, exponent: Tensor, negative: Tensor) -> Tensor:
    """Each value of nine *digits* (``%g``'s six padded with zeros) and decimal *exponent*
    as ``%g`` writes it with an exponent (``-1.82147e-05``, ``2e+06``), in a row of fixed
    columns: sign, first digit, point, the other eight digits, exponent; NUL where a
    column has nothing to say (``translate`` drops them)."""
    count = digits.size
    if not count:
        return np.zeros((0, _WIDTH), dtype=np.uint8)
    grid = np.frombuffer(orjson.dumps(digits, option=_NUMPY), dtype=np.uint8,
                         offset=1).reshape(count, 10)  # nine digits and a comma (or "]")
    rest = np.strings.rstrip(grid[:, 1:9].copy().view("S8").ravel(), b"0")
    rows = np.zeros((count, _WIDTH), dtype=np.uint8)
    rows[:, 0] = np.where(negative, ord("-"), 0)
    rows[:, 1] = grid[:, 0]
    rows[:, 2] = np.where(rest != b"", ord("."), 0)
    rows[:, 3:11] = rest.view(np.uint8).reshape(count, 8)
    rows[:, 11:15] = EXPONENTS[exponent + 30].view(np.uint8).reshape(count, 4)
    return rows
