"""Large arrays of floats printed as TF Serving's ``WriteDecimal`` prints them, at numpy speed.

``WriteDecimal`` prints ``%g``, reads it back, and prints ``%.9g`` (float32) or ``%.17g``
(float64) when those six digits do not give the value back. Python formats a double with
17 digits in about 0.5 us (a correctly rounded ``dtoa``), most of a large response of
probabilities. :func:`float_cells` finds every value's digits with numpy and lays out the
texts with numpy's string functions, each one C loop over the whole array:

1. each value is scaled by an exact power of ten in long double (64 bits of mantissa) and
   rounded to an integer of *P* digits (9 or 17): the ``%.9g``/``%.17g`` digits. The
   product's one rounding moves it at most half a unit in its last place, and its distance
   to the nearest integer is a whole number of such units: under one half, that integer
   is the exact product's; a distance of one half (a tie, or a product too near one for
   64 bits to decide) leaves the value to the caller, as does a value that would need a
   power of ten past 10**27 (or has no long double to scale in);
2. those digits rounded again to six are ``%g``'s, which can read back only for digits
   near a multiple of a six-digit step; for those, the double that text stands for is one
   exact operation away, so "does ``%g`` read back" is one comparison;
3. orjson prints the integers (every one *P* digits long, so the text is a grid), and the
   texts are cut and joined as ``%g`` lays them out: fixed notation from 1e-4 up to
   10**digits, else an exponent of at least two digits; trailing zeros cut; ``.0`` after
   a whole number, as TF Serving adds it.

Every text answered here equals the rule's, value by value (:func:`write_decimal`).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np
import orjson

from ...types import Tensor

EXACT = np.finfo(np.longdouble).nmant >= 63
"""Long double has the 64-bit mantissa the error bound needs (x86's extended precision,
or quad); elsewhere (where it is a double) every value is left to the caller."""

VECTORISED = EXACT and hasattr(np, "strings") and hasattr(np.strings, "slice")
"""numpy's string functions (numpy 2.3 and later) and a long double to scale in: else
every number is printed by :func:`write_decimal`, one by one."""

CELL = np.dtype("S25")
"""One number's text: at most 24 characters (``-1.2345678901234567e-308``), NUL-padded."""
BLOCK = 65536
"""Floats are printed this many at a time: numpy's temporaries stay a few MiB."""

_LONG_POWERS = np.cumprod(np.array([1] + [10] * 27, dtype=np.longdouble))
"""10**0..10**27, exact in a 64-bit mantissa (5**27 < 2**64)."""
POWERS = np.array([float(10 ** i) for i in range(23)])
"""10**0..10**22: the powers of ten that are exact doubles."""
LOWEST = {9: -17, 17: -11}
"""The lowest decimal exponent printed here: 17 digits of 1e-11 need 10**27, and the
``%g`` candidate of a float32 at most 10**22."""
_SCALES = {precision: _LONG_POWERS[[precision - 1 - (i if i < precision else i - width)
                                     for i in range(width)]]
           for precision, width in ((9, 9 + 17), (17, 17 + 11))}
"""By exponent *e* (``LOWEST`` up to *precision* - 1, negative ones counted from the
end): 10**(precision - 1 - e), which scales a value to *precision* digits."""
_NO_INDICES = np.zeros(0, dtype=np.intp)
"""What :func:`float_cells` answers when it leaves no value to the caller (read-only)."""
_NO_INDICES.flags.writeable = False
FEW_OTHERS = 16
"""Values of another layout (over one, under 1e-4) among values below one that are left to
the caller's :func:`write_decimal` instead of numpy's calls on each layout (about 2 us
each against about 30 us for the other layouts' calls, 200 values)."""
FIXED_FROM = -4
"""``%g`` writes exponents from -4 up to (not including) its precision without ``e``."""
_LEADS = np.array([b"", b"0.", b"0.0", b"0.00", b"0.000"])
"""What comes before the digits of a value with exponent -1..-4."""
EXPONENTS = np.array([b"e%+03d" % e for e in range(-30, 31)])
"""``e-05``, ``e+17``: ``%g``'s exponent, from -30 (index 0) to 30."""
_NON_FINITE = {True: "Infinity", False: "-Infinity"}


def write_decimal(value: float, single: bool) -> str:
    """One number as ``WriteDecimal`` prints it: the rule, value by value."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else _NON_FINITE[value > 0]
    text = "%g" % value
    back = float(text)
    if (np.float32(back) != np.float32(value)) if single else back != value:
        text = ("%.9g" if single else "%.17g") % value
    return text if "." in text or "e" in text else text + ".0"


def percent_texts(numbers: list[float], single: bool) -> list[str] | None:
    """The rule for a list of finite values (*single*: float32 values), each step one C
    loop over them all: one ``%`` of a ``"%g,"`` template, read back with ``float`` (and
    rounded to float32 by ``array("f")``), the long form printed the same way where any
    value needs it. ``None`` when a value is not finite. In a request, after the model
    has run, this costs less than :func:`float_cells` up to a few hundred float32
    values, whose numpy calls each start from cold caches; float64's 17 digits cost
    Python too much for the same."""
    count = len(numbers)
    values = tuple(numbers)
    text = "%g," * count % values
    if "n" in text:  # nan, inf
        return None
    short = text.split(",")
    short.pop()
    back = list(map(float, short))
    if single:
        back = array("f", back).tolist()
    texts = short
    if back != numbers:
        long = (("%.9g," if single else "%.17g,") * count % values).split(",")
        texts = [s if b == v else w for s, w, b, v in zip(short, long, back, numbers)]
    if ",".join(texts).count(".") != count:  # a text without a point: a whole number?
        texts = [t if "." in t or "e" in t else t + ".0" for t in texts]
    return texts


def print_floats(values: Tensor, single: bool) -> Tensor:
    """Every value's text as a :data:`CELL` array: :func:`float_cells` on blocks of
    :data:`BLOCK` values, what it leaves printed by :func:`write_decimal`."""
    cells = np.empty(values.size, dtype=CELL)
    for start in range(0, values.size, BLOCK):
        part = values[start:start + BLOCK].astype(np.float64, copy=False)
        part_cells, left = float_cells(part, single)
        if left.size:
            part_cells[left] = [write_decimal(value, single).encode("ascii")
                                for value in part[left].tolist()]
        cells[start:start + BLOCK] = part_cells
    return cells


def float_cells(values: Tensor, single: bool) -> tuple[Tensor, Tensor]:
    """``WriteDecimal``'s text of each float64 value (*single*: of a float32 tensor) as a
    :data:`CELL` array, and the indices of the values left to the caller (their cell is
    empty)."""
    if not EXACT:
        return np.zeros(values.size, dtype=CELL), np.arange(values.size)
    precision = 9 if single else 17
    low = 10 ** (precision - 1)
    magnitude = np.abs(values)
    with np.errstate(all="ignore"):  # NaN and infinities fail every comparison: not usable
        exponent = np.floor(np.log10(magnitude))
        usable = (exponent >= LOWEST[precision]) & (exponent < precision)
        exponent = np.where(usable, exponent, 0).astype(np.intp)
        scaled = magnitude.astype(np.longdouble) * _SCALES[precision][exponent]
        rounded = np.rint(scaled)
        digits = rounded.astype(np.int64)  # below 10**precision: exact
        usable &= np.abs(scaled - rounded) < 0.5  # see step 1
    usable &= (digits >= low) & (digits < 10 * low)
    shown = six_digits(digits, exponent, usable, magnitude, single)
    every = bool(usable.all())  # then no zero either
    if not every:
        digits[~usable] = low
    cells, printed = _layout(_digit_texts(digits, precision), exponent, shown, usable)
    if not every:
        zero = magnitude == 0
        cells[zero] = b"0.0"
        printed = printed | zero
    negative = np.signbit(values)
    if negative.any():
        negative &= printed
        cells[negative] = np.strings.add(b"-", cells[negative])
    return cells, _NO_INDICES if printed.all() else np.flatnonzero(~printed)


def six_digits(digits: Tensor, exponent: Tensor, usable: Tensor, magnitude: Tensor,
               single: bool) -> Tensor | int:
    """Where ``%g``'s six digits read back as the value, put them (padded with zeros) and
    their exponent in place of *digits* and *exponent*; answer how many digits each value
    shows. The text can read back only if the value is within half an ulp of it: its
    digits within 12 (17 digits: 10**17 * 2**-53 units and the rounding) or 61 (9 digits
    of a float32: 10**9 * 2**-24) of a multiple of the cut, so only those are checked (a
    remainder on the six digits' midpoint is far from both: those print all their digits
    whichever way ``%g`` would round them)."""
    precision = 9 if single else 17
    cut = 10 ** (precision - 6)
    reach = 64 if single else 16
    near = (digits + reach) % cut < 2 * reach
    near &= usable
    if not near.any():
        return precision
    index = np.flatnonzero(near)
    six, rest = np.divmod(digits[index], cut)
    short = six + (rest > cut // 2)
    carry = short == 10 ** 6
    short[carry] = 10 ** 5
    short_exponent = exponent[index] + carry
    shift = short_exponent - 5
    power = POWERS[np.abs(shift)]  # shift is within -22..22 (see LOWEST)
    candidate = np.where(shift >= 0, short * power, short / power)
    target = magnitude[index]
    back = (candidate.astype(np.float32) == target.astype(np.float32) if single
            else candidate == target)
    hit = index[back]
    digits[hit] = short[back] * cut  # P digits either way: the text stays a grid
    exponent[hit] = short_exponent[back]
    shown: Tensor = np.full(digits.size, precision)
    shown[hit] = 6
    return shown


def _digit_texts(digits: Tensor, precision: int) -> Tensor:
    """Integers of *precision* digits each as an ``S<precision>`` array: one orjson print,
    whose text is a grid of *precision* digits and a comma."""
    text = orjson.dumps(digits, option=orjson.OPT_SERIALIZE_NUMPY)
    grid = np.frombuffer(text, dtype=np.uint8, offset=1).reshape(digits.size, precision + 1)
    return grid[:, :precision].copy().view(f"S{precision}").ravel()


def _layout(digits: Tensor, exponent: Tensor, shown: Tensor | int,
            usable: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's text from its significant *digits* (``S<P>``, ``%g``'s six padded with
    zeros) and decimal *exponent*, as ``%g`` lays them out, and which values were printed:
    the *usable* ones, or only those below one when at most :data:`FEW_OTHERS` are not
    (a classifier's probabilities, a few under 1e-4), the others then left to the caller
    as well. The cells of values not printed are empty."""
    stripped = np.strings.rstrip(digits, b"0")  # never empty: the first digit is not 0
    below_one = usable & (exponent < 0) & (exponent >= FIXED_FROM)  # 0.000ddd
    others = np.count_nonzero(usable) - np.count_nonzero(below_one)
    if others <= FEW_OTHERS:
        leads = _LEADS[np.where(below_one, -exponent, 0)]  # one join over the whole array
        cells: Tensor = np.strings.add(leads, stripped).astype(CELL)
        if not below_one.all():
            cells[~below_one] = b""
        return cells, below_one if others else usable
    cells = np.zeros(digits.size, dtype=CELL)
    fixed = (exponent >= FIXED_FROM) & (exponent < shown)
    if below_one.any():
        cells[below_one] = np.strings.add(_LEADS[-exponent[below_one]], stripped[below_one])
    above_one = usable & fixed & (exponent >= 0)  # ddd.ddd, ddd.0
    if above_one.any():
        point = exponent[above_one] + 1
        head = np.strings.slice(digits[above_one], 0, point)
        tail = np.strings.slice(stripped[above_one], point, 100)
        tail[tail == b""] = b"0"
        cells[above_one] = _join(head, b".", tail)
    scientific = usable & ~fixed  # d.ddde-05, de+17
    if scientific.any():
        first = _split_first(digits[scientific])[0]
        rest = _split_first(stripped[scientific])[1]
        mantissa = np.where(rest == b"", first, _join(first, b".", rest))
        cells[scientific] = _join(mantissa, EXPONENTS[exponent[scientific] + 30])
    return cells, usable


def _split_first(texts: Tensor) -> tuple[Tensor, Tensor]:
    """Each text's first character and the rest, by viewing the fixed-width bytes (cheaper
    than ``np.strings.slice`` on short arrays)."""
    grid = texts.view(np.uint8).reshape(texts.size, texts.dtype.itemsize)
    return (grid[:, :1].copy().view("S1").ravel(),
            grid[:, 1:].copy().view(f"S{texts.dtype.itemsize - 1}").ravel())


def _join(*parts: Any) -> Tensor:
    """The texts of *parts* (arrays of bytes, or one bytes for all) joined element-wise."""
    joined = parts[0]
    for part in parts[1:]:
        joined = np.strings.add(joined, part)
    result: Tensor = joined
    return result
