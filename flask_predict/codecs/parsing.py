"""JSON text -> Python values and back: the one place that parses request bodies.

Policy, decided once here:

* ``NaN``, ``Infinity`` and ``-Infinity`` tokens are accepted in requests and printed in
  responses (TF Serving's JSON rules); integers of any size are accepted.
* Parsing uses orjson (several times faster than the standard library on number-heavy bodies)
  and falls back to simplejson for the non-standard tokens orjson refuses.
* Large numeric bodies skip Python objects through simdjson (:func:`number_matrix`,
  :func:`loads_v2_infer`). simdjson keeps an array's element count in 24 bits: ``len()``,
  ``as_list`` and ``as_dict`` stop at 16,777,215 elements (and ``as_list`` past that has
  corrupted the heap). An array that long needs a body of more than :data:`SIMDJSON_SAFE_BYTES`
  bytes, so longer bodies never reach simdjson: they take the orjson path, whose counts are
  exact, and every answer is the same as for a short body.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

import numpy as np
import orjson
import simdjson
import simplejson

from ..errors import InvalidInput
from ..types import Tensor
from .dtypes import FLOAT_DATATYPES
from .scanning import count_byte

SIMDJSON_MAX_COUNT = 0xFFFFFF
"""simdjson's largest element count: ``len()`` of a longer array says this much."""
SIMDJSON_SAFE_BYTES = 2 * SIMDJSON_MAX_COUNT
"""Bodies up to this long hold no array of more than :data:`SIMDJSON_MAX_COUNT` elements
(``[0,0,...]`` takes 2 bytes per element and one more): only those are given to simdjson."""
REUSED_PARSER_BYTES = 4 * 1024 * 1024
"""A body up to this long is parsed by the thread's reused simdjson parser; a longer one by
a parser of its own, freed with it, so a worker does not keep a large body's buffers."""


def loads(body: bytes | str) -> Any:
    """Parse a JSON body; raise :class:`InvalidInput` with the parser's reason."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    if not _long_integers(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as fast_error:
            if "recursion" in str(fast_error):
                raise InvalidInput("JSON Parse error: nested too deeply")
    try:  # orjson refuses NaN/Infinity tokens and integers over 64 bits
        return simplejson.loads(data, allow_nan=True)
    except RecursionError:
        raise InvalidInput("JSON Parse error: nested too deeply")
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"JSON Parse error: {exc}")


_DOT, _E = ord("."), ord("e")


def _long_integers(body: bytes) -> bool:
    """Whether *body* may hold an integer of 19 digits or more: orjson reads one past the
    64-bit range as a float (``-9223372036854775809`` becomes ``-9.223372036854776e18``),
    so such a body goes to simplejson, which keeps it whole. Digit runs inside fractions
    do not count; other false alarms only cost speed. numpy scans at C speed, a block at a
    time (each block starts 40 bytes early, so no run is missed at a boundary)."""
    if len(body) < 19:
        return False
    if len(body) <= _SCAN_SMALL:
        # at C speed: no run of 19 digits at all (the common case), else the exact search
        if _NINETEEN_DIGITS not in body.translate(_DIGITS_AS_ZEROS):
            return False
        return _LONG_INTEGER.search(body) is not None
    text = np.frombuffer(body, np.uint8)
    return any(_long_integers_in(text[max(start - 40, 0):start + _SCAN_BLOCK])
               for start in range(0, text.size, _SCAN_BLOCK))


_SCAN_BLOCK = 1 << 20
_SCAN_SMALL = 65536
"""Bodies up to this size are scanned without numpy, whose set-up costs more there."""
_DIGITS_AS_ZEROS = bytes(b"0"[0] if chr(b).isdigit() and b < 128 else b" "[0] for b in range(256))
_NINETEEN_DIGITS = b"0" * 19
_LONG_INTEGER = re.compile(rb"(?<![.\d])\d{19,}(?![.\deE])")
"""A run of 19 digits or more that is not part of a fraction (what :func:`_long_integers_in`
finds)."""


def _long_integers_in(text: Tensor) -> bool:
    edges = np.diff(((text - 48) < 10).view(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    long = ends - starts >= 19
    if not long.any():
        return False
    starts, ends = starts[long], ends[long]
    before = text[np.maximum(starts - 1, 0)]
    after = text[np.minimum(ends, text.size - 1)] | 0x20  # lower case; a digit never ends it
    whole = (before != _DOT) & (after != _DOT | 0x20) & (after != _E)
    return bool(whole.any())


# --- simdjson accelerators ----------------------------------------------------------------

_simdjson = threading.local()


def parse_simdjson(body: bytes | bytearray) -> Any:
    """Parse with simdjson: this thread's reused parser for a short body (a new parser per
    call would allocate its buffers again: about 2 ms of a 2 MB body), else a parser of its
    own. A parser whose last document is still referenced refuses to parse; then a new one
    does. The caller has checked the body's length against :data:`SIMDJSON_SAFE_BYTES`."""
    if len(body) > REUSED_PARSER_BYTES:
        return simdjson.Parser().parse(body)
    parser = getattr(_simdjson, "parser", None)
    if parser is None:
        parser = _simdjson.parser = simdjson.Parser()
    try:
        return parser.parse(body)
    except RuntimeError:  # "Tried to re-use a parser while ... objects still exist"
        return simdjson.Parser().parse(body)


def number_matrix(body: bytes, key: str) -> Tensor | None:
    """*body*'s only member *key* as a float64 matrix when it is a non-empty rectangular
    array of rows of plain JSON numbers; ``None`` for any other body.

    An accelerator for large numeric bodies: simdjson reads the numbers straight into one
    buffer, with no Python object per number (about ten times faster than :func:`loads`
    and ``to_array`` on 10,000 rows). Whenever it answers, the answer equals
    ``to_array(loads(body)[key], "FP64", ...)``; anything it is not sure of (other keys,
    ``null``, booleans, nesting, ragged rows, integers from 2**53 on, bad JSON, bodies over
    :data:`SIMDJSON_SAFE_BYTES`) is left to those, with their errors.

    A small body (a few rows) is read by orjson instead: simdjson's set-up costs more than
    the whole parse there.
    """
    if len(body) <= SMALL_BODY:
        return _small_number_matrix(body, key)
    try:
        rows = simdjson_member(body, key)
        if not isinstance(rows, simdjson.Array) or not len(rows):
            return None
        width = len(rows[0]) if isinstance(rows[0], simdjson.Array) else 0
        # every row of *width* items and no array but the rows: so every row is an array of
        # numbers (len() of a number raises TypeError; as_buffer refuses a row that is an
        # object or a string, and anything but numbers inside the rows)
        if not width or count_byte(body, b"[") != len(rows) + 1:
            return None
        if set(map(len, rows)) != {width}:  # type: ignore[arg-type]  # a number: TypeError
            return None
        flat = np.frombuffer(rows.as_buffer(of_type="d"), dtype=np.float64)
    except (ValueError, TypeError, RuntimeError, KeyError, IndexError):
        return None
    if flat.size != len(rows) * width or np.abs(flat).max() >= 2.0 ** 53:
        return None  # from 2**53 on, an integer's rounding could differ from to_array's
    return flat.reshape(len(rows), width)


def simdjson_member(body: bytes, key: str) -> Any:
    """The value of *body*'s only member *key*, parsed by simdjson (which raises
    ``ValueError`` on bad JSON); ``None`` for a body that is another value, or longer than
    :data:`SIMDJSON_SAFE_BYTES`."""
    if len(body) > SIMDJSON_SAFE_BYTES:
        return None
    document = parse_simdjson(body)
    if not isinstance(document, simdjson.Object) or list(document.keys()) != [key]:
        return None
    return document[key]


SMALL_BODY = 768
"""Bodies up to this many bytes (about 4 rows of 20 numbers) take :func:`_small_number_matrix`:
fewer instructions than simdjson below that, more above."""


def _small_number_matrix(body: bytes, key: str) -> Tensor | None:
    """:func:`number_matrix` by orjson, for a body that is nothing but ``{"<key>": ...}``
    around number text (:func:`_number_member`): every value is then a number or an array."""
    exact = _number_member(body, key)
    if exact is None:
        return None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:  # huge integers, bad JSON: loads decides
        return None
    if type(document) is not dict or len(document) != 1:
        return None
    rows = document.get(key)
    if type(rows) is not list or not rows or type(rows[0]) is not list or not rows[0]:
        return None
    try:
        matrix = np.array(rows, dtype=np.float64)
    except (ValueError, OverflowError):  # ragged rows
        return None
    if matrix.ndim != 2:
        return None
    # without exponents and with no 16 digits in a row, every number is under 10**15
    if exact and _SIXTEEN_DIGITS not in body.translate(_DIGITS_AS_ZEROS):
        return matrix
    if np.abs(matrix).max() >= 2 ** 53:
        return None  # from 2**53 on, an integer's rounding could differ from to_array's
    return matrix


_NUMBER_TEXT = b"0123456789.-,[] \t\n\r"
"""What arrays of numbers without exponents are written with."""
_EXPONENT_TEXT = b"eE+"
_SIXTEEN_DIGITS = b"0" * 16


def _number_member(body: bytes, key: str) -> bool | None:
    """Whether *body*, once its number text is deleted, is left as ``{"<key>":}`` would be:
    ``True`` when no number has an exponent, ``False`` when some may, ``None`` when the
    body holds anything else (a string, ``true``, ``null``, another key, ``NaN``...).

    Its only quotes are then the key's, so the key is its only string; outside it are only
    ``{``, ``:``, ``}`` and number text. One pass at C speed, where a search for each token
    costs a pass each."""
    expected = _member_texts(key)
    if expected is None:
        return None
    rest = body.translate(None, _NUMBER_TEXT)
    if rest == expected[0]:
        return True
    return False if rest.translate(None, _EXPONENT_TEXT) == expected[1] else None


@functools.lru_cache(maxsize=16)
def _member_texts(key: str) -> tuple[bytes, bytes] | None:
    """What :func:`_number_member` compares to: ``{"<key>":}`` without number text, then
    without exponent text too; ``None`` for a key with quotes or escapes."""
    if '"' in key or "\\" in key or not key.isprintable():
        return None
    plain = ('{"' + key + '":}').encode().translate(None, _NUMBER_TEXT)
    return plain, plain.translate(None, _EXPONENT_TEXT)


def loads_v2_infer(body: bytes) -> Any:
    """Parse an Open Inference Protocol V2 ``/infer`` body as :func:`loads` does, except that
    the ``data`` of a floating-point input (FP16, FP32, FP64, BF16) holding only numbers
    comes back as a flat float64 array: simdjson reads the numbers straight into one buffer,
    with no Python object per number. Its nesting is not kept (V2 data is flattened
    row-major anyway); any other body or value takes the :func:`loads` path and its errors.
    """
    if len(body) > SIMDJSON_SAFE_BYTES or len(body) <= SMALL_BODY:
        return loads(body)  # a small body: simdjson's set-up costs more than the whole parse
    try:
        document = parse_simdjson(body)
        if not isinstance(document, simdjson.Object) or _duplicates(document):
            return loads(body)
        # items() would turn every value into Python objects: look each key up lazily
        parsed = {key: _python(document[key]) for key in document.keys() if key != "inputs"}
        if "inputs" in document:
            inputs = document["inputs"]
            parsed["inputs"] = (_v2_inputs(body, inputs, parsed)
                                if isinstance(inputs, simdjson.Array) else _python(inputs))
        return parsed
    except (ValueError, TypeError, RuntimeError,  # bad JSON, NaN tokens, huge integers
            KeyError):  # simdjson cannot look up a key holding "\u0000"
        return loads(body)


def _duplicates(obj: Any) -> bool:
    """Whether the simdjson object *obj* repeats a key: a lookup finds the first, where
    JSON parsers (and ``as_dict``) keep the last."""
    keys = list(obj.keys())
    return len(set(keys)) != len(keys)


def _v2_inputs(body: bytes, inputs: Any, parsed: dict[str, Any]) -> list[Any]:
    """The ``inputs`` of a V2 body, float data as flat arrays where it holds only numbers.

    simdjson's buffer flattens any nesting, so the arrays in the data must be counted too:
    when the body's ``[`` add up to the arrays found everywhere else plus those each fast
    input's data should hold, no data holds more (one count of the body); otherwise (nested
    data, or a ``[`` inside a string) each fast input's data is printed and counted.
    """
    found = [_v2_input(tensor) for tensor in inputs]
    values = [value for value, _ in found]
    fast = [(index, arrays) for index, (_, arrays) in enumerate(found) if arrays is not None]
    # values is the "inputs" array itself
    expected = _arrays_in(parsed) + _arrays_in(values) + sum(n for _, n in fast)
    if fast and count_byte(body, b"[") != expected:
        for index, arrays in fast:
            if _brackets(inputs[index]["data"]) != arrays:
                values[index] = _python(inputs[index])
    return values


def _arrays_in(value: Any) -> int:
    """How many lists the Python *value* holds, itself included (numpy arrays not)."""
    if isinstance(value, list):
        return 1 + sum(_arrays_in(item) for item in value)
    if isinstance(value, dict):
        return sum(_arrays_in(item) for item in value.values())
    return 0


def _v2_input(tensor: Any) -> tuple[Any, int | None]:
    """One input, and how many arrays its data holds when that data became a flat float64
    array (``None``: the input as Python values)."""
    if not isinstance(tensor, simdjson.Object) or _duplicates(tensor):
        return _python(tensor), None
    data = tensor.get("data")
    if tensor.get("datatype") not in FLOAT_DATATYPES or not isinstance(
            data, simdjson.Array) or not len(data):
        return _python(tensor), None
    plain = {key: _python(tensor[key]) for key in tensor.keys() if key != "data"}
    try:
        flat = np.frombuffer(data.as_buffer(of_type="d"), dtype=np.float64)
    except (TypeError, ValueError):  # null, booleans or strings among the numbers
        return _python(tensor), None
    # only flat data or rows of one width: any other nesting gets to_array's error. Every
    # item is a number (as_buffer refused the rest), so brackets count the arrays.
    first = data[0]
    if isinstance(first, simdjson.Array):
        width = len(first)
        if flat.size != len(data) * width or any(
                not isinstance(row, simdjson.Array) or len(row) != width for row in data):
            return _python(tensor), None
        arrays = len(data) + 1
    elif flat.size != len(data):
        return _python(tensor), None
    else:
        arrays = 1
    plain["data"] = flat
    return plain, arrays


def _brackets(array: Any) -> int:
    """How many arrays the simdjson *array* holds, itself included."""
    text: bytes = array.mini
    return text.count(b"[")


def _python(value: Any) -> Any:
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value
