"""Python values and numpy arrays -> JSON text: the one place that prints response bodies.

* :func:`dumps` prints ``NaN``/``Infinity`` tokens and float32 values at float32 precision
  (AI Platform, grps); :func:`dumps_strict` prints non-finite values as ``null`` (V2).
* :func:`dumps_tfserving` prints numbers as TF Serving's JSON writer does
  (``WriteDecimal`` in ``json_tensor.cc``): ``%g`` when those six digits read back as the same
  value in the tensor's own precision, else ``%.9g`` (float32) or ``%.17g`` (float64), and
  ``.0`` after a whole number not written with an exponent: ``9e+06``, ``2.05``, ``3.0``,
  ``0.333333343``.
* :func:`preview` quotes a value in an error message without printing more of it than shown.
"""

from __future__ import annotations

import base64
import functools
import math
from typing import Any, Mapping

import numpy as np
import orjson
import simplejson

from ..types import Tensor
from .digits import significant_texts


def dumps(obj: Any) -> bytes:
    """Print *obj* as JSON; numpy arrays and scalars may appear anywhere in it.

    orjson prints numpy arrays directly, but writes non-finite floats as ``null``; when a
    ``null`` shows up and the value really holds NaN or infinity, simplejson prints it again
    with the ``NaN``/``Infinity`` tokens.
    """
    try:
        fast = orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)
        if b"null" not in fast or _all_finite(obj):
            return fast
    except TypeError:
        pass
    text: str = simplejson.dumps(obj, default=_plain, allow_nan=True, separators=(",", ":"))
    return text.encode()


def dumps_strict(obj: Any) -> bytes:
    """Print *obj* as strict JSON, non-finite floats as ``null`` (the V2 protocol's rule,
    as KServe and MLServer print them). Numpy arrays of numbers may appear anywhere."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def b64_value(data: bytes) -> dict[str, str]:
    return {"b64": base64.b64encode(data).decode("ascii")}


def _plain(value: Any) -> Any:
    # float32 values keep their shortest float32 text (2.05, not 2.049999952316284), as
    # orjson prints them on the fast path
    if isinstance(value, np.ndarray):
        if value.dtype == np.float32:
            return value.astype(str).astype(np.float64).tolist()
        return value.tolist()
    if isinstance(value, np.float32):
        return float(str(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return b64_value(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _all_finite(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.isfinite(obj).all())
    if isinstance(obj, np.floating):
        return bool(np.isfinite(obj))
    if isinstance(obj, Mapping):
        return all(_all_finite(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_all_finite(v) for v in obj)
    return True


# --- TF Serving's writer ------------------------------------------------------------------

class Raw(str):
    """JSON text already printed: :func:`dumps_tfserving` writes it as it is."""


_EXACT_POWERS = 22
"""10**k is an exact double for k up to 22: a 6-digit integer times or over it rounds once."""
_NON_FINITE = {True: "Infinity", False: "-Infinity"}
_SMALL = 16
"""Arrays up to this size are printed number by number (numpy's fixed cost is larger)."""
_BLOCK = 65536
_VECTOR = 1000
"""From this many float64 numbers of one kind on, :func:`digits.significant_texts` prints
them (below, its fixed cost is more than it saves)."""


def float_texts(array: Tensor) -> list[str]:
    """Each element of float32/float64 *array*, flattened, as TF Serving prints it.
    Vectorised: Python formats the numbers in one ``%``-operation per kind, a block of
    :data:`_BLOCK` numbers at a time (so the temporaries stay small)."""
    single = array.dtype == np.float32
    values = np.ravel(array).astype(np.float64)
    if values.size <= _BLOCK:
        return _block_texts(values, single)
    texts: list[str] = []
    for start in range(0, values.size, _BLOCK):
        texts.extend(_block_texts(values[start:start + _BLOCK], single))
    return texts


def _block_texts(values: Tensor, single: bool) -> list[str]:
    if values.size <= _SMALL:
        return [_write_decimal(value, single) for value in values.tolist()]
    finite = np.isfinite(values)
    six, candidates, exact = _six_digits(values, single)
    whole = finite & (values == np.floor(values)) & (np.abs(values) < _whole_limit(six, single))
    wide = "%.9g" if single else "%.17g"
    kinds = ((six & ~whole, "%g", candidates), (six & whole, "%g.0", candidates),
             (finite & ~six & ~whole, wide, values), (finite & ~six & whole, wide + ".0", values))
    if exact.all() and finite.all():
        for mask, form, source in kinds:  # one kind only (the usual case): one operation
            if mask.all():
                return _kind_texts(form, source)
    texts = np.empty(values.size, dtype=object)
    for mask, form, source in kinds:
        index = np.flatnonzero(mask)
        if index.size:
            texts[index] = _kind_texts(form, source[index])
    for i in np.flatnonzero(~(finite & exact)).tolist():  # non-finite, or past 1e-17..1e27
        texts[i] = _write_decimal(float(values[i]), single)
    result: list[str] = texts.tolist()
    return result


def _kind_texts(form: str, values: Tensor) -> list[str]:
    """Each of *values* printed by the ``%`` format *form*: ``%.17g`` of :data:`_VECTOR`
    values or more by :func:`digits.significant_texts` (1.8 times faster on 20,000; the
    caller passes it only finite, non-zero values that are not whole numbers), what it leaves
    and everything else by ``%`` (``%.9g`` costs less than the numpy path)."""
    if form != "%.17g" or values.size < _VECTOR:
        return _formatted(form, values.tolist())
    texts, left = significant_texts(values, 17)
    if left.size:
        for index, text in zip(left.tolist(), _formatted(form, values[left].tolist())):
            texts[index] = text
    return texts


def _formatted(form: str, values: list[float]) -> list[str]:
    """Each of *values* printed by the ``%`` format *form*, in one operation."""
    return (",".join([form] * len(values)) % tuple(values)).split(",")


def _whole_limit(six: Tensor, single: bool) -> Tensor:
    """Below this a whole number prints without exponent: 1e6 for ``%g``, 1e9 or 1e17 for
    ``%.9g``/``%.17g``."""
    return np.where(six, 1e6, 1e9 if single else 1e17)


def _six_digits(values: Tensor, single: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Which values read back the same from ``%g`` (six significant digits), the double each
    ``%g`` text stands for, and where that answer is exact. The six digits are scaled by an
    exact power of ten, so the candidate is exactly the double that parsing the text gives;
    a value that needs a power beyond 10**22 is not exact here."""
    with np.errstate(all="ignore"):
        magnitude = np.abs(values)
        exponent = np.floor(np.log10(np.where(magnitude > 0, magnitude, 1.0)))
        exact = np.abs(5 - exponent) < _EXACT_POWERS
        scale = (5 - exponent).clip(-_EXACT_POWERS, _EXACT_POWERS)
        digits = np.round(magnitude * 10.0 ** scale)
        # log10 can be one off next to a power of ten: rescale into [1e5, 1e6)
        low, high = digits < 1e5, digits >= 1e6
        scale = np.where(low, scale + 1, np.where(high, scale - 1, scale)).clip(
            -_EXACT_POWERS, _EXACT_POWERS)
        digits = np.round(magnitude * 10.0 ** scale)
        candidates = np.where(scale >= 0, digits / 10.0 ** scale, digits * 10.0 ** -scale)
        candidates = np.copysign(candidates, values)
        same = (candidates.astype(np.float32) == values.astype(np.float32) if single
                else candidates == values)
    six = np.isfinite(values) & same & (digits < 1e6) & (digits >= 1e5)
    zero = values == 0
    return six | zero, np.where(zero, values, candidates), exact | zero


def _write_decimal(value: float, single: bool) -> str:
    """One number as ``WriteDecimal`` prints it (the rule, value by value)."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else _NON_FINITE[value > 0]
    text = "%g" % value
    back = float(text)
    if (np.float32(back) != np.float32(value)) if single else back != value:
        text = ("%.9g" if single else "%.17g") % value
    return text if "." in text or "e" in text else text + ".0"


def array_text(array: Tensor) -> str:
    """*array* as nested JSON lists (a 0-d array as a bare value), floats TF Serving's way:
    every element's text put into one ``%s`` template of the array's shape."""
    if array.ndim == 0:
        return element_texts(array)[0]
    template = "[" + ",".join([row_template(array.shape[1:])] * len(array)) + "]"
    return template % tuple(element_texts(array))


@functools.lru_cache(maxsize=256)
def row_template(shape: tuple[int, ...]) -> str:
    """A ``%s`` for each element of an array of *shape*, nested as JSON lists."""
    if not shape:
        return "%s"
    return "[" + ",".join([row_template(shape[1:])] * shape[0]) + "]"


def element_texts(array: Tensor) -> list[str]:
    """Each element's JSON text, flattened row-major."""
    if array.dtype in (np.float32, np.float64):
        return float_texts(array)
    if array.dtype.kind in "biu":  # orjson prints the whole array in C: split its text
        if not array.size:
            return []
        text = orjson.dumps(np.ravel(array), option=orjson.OPT_SERIALIZE_NUMPY).decode()
        return text[1:-1].split(",")
    return [orjson.dumps(v, option=orjson.OPT_SERIALIZE_NUMPY).decode()
            for v in np.ravel(array).tolist()]


def dumps_tfserving(obj: Any) -> bytes:
    """Print *obj* (dicts, lists, numpy arrays and scalars, :class:`Raw` text) as TF
    Serving prints a response; numbers as its ``WriteDecimal`` does."""
    return _tf_text(obj).encode("utf-8")


def _tf_text(obj: Any) -> str:
    if isinstance(obj, Raw):
        return str(obj)
    if isinstance(obj, Mapping):
        return "{" + ",".join(f"{_key(k)}:{_tf_text(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(_tf_text(v) for v in obj) + "]"
    if isinstance(obj, np.ndarray):
        return array_text(obj)
    if isinstance(obj, float) or (isinstance(obj, np.floating) and obj.dtype in (
            np.float32, np.float64)):
        return float_texts(np.asarray(obj))[0]
    text: bytes = orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)
    return text.decode("utf-8")


def _key(key: Any) -> str:
    return orjson.dumps(str(key)).decode("utf-8")


# --- values in error messages --------------------------------------------------------------

def preview(value: Any, limit: int = 200) -> str:
    """*value* as compact JSON for an error message, cut after *limit* characters with
    ``...``; never prints more of it than that (a 64 MiB body costs no more than a small
    one)."""
    parts: list[str] = []
    room = [limit + 1]

    def emit(text: str) -> bool:
        parts.append(text[:room[0]])
        room[0] -= len(text)
        return room[0] > 0

    def walk(item: Any) -> bool:
        if isinstance(item, Mapping):
            if not emit("{"):
                return False
            for index, (key, sub) in enumerate(item.items()):
                if not emit(("," if index else "") + _short_json(str(key), room[0]) + ":"):
                    return False
                if not walk(sub):
                    return False
            return emit("}")
        if isinstance(item, (list, tuple)):
            if not emit("["):
                return False
            for index, sub in enumerate(item):
                if (index and not emit(",")) or not walk(sub):
                    return False
            return emit("]")
        return emit(_scalar_json(item, room[0]))

    walk(value)
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit] + "..."


def _short_json(text: str, room: int) -> str:
    return orjson.dumps(text[:max(room, 0) + 1]).decode("utf-8")


def _scalar_json(value: Any, room: int) -> str:
    if isinstance(value, str):
        return _short_json(value, room)
    if isinstance(value, float):
        return float_texts(np.asarray(value))[0]
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")[
            :max(room, 0) + 1]
    except TypeError:
        return repr(value)[:max(room, 0) + 1]

