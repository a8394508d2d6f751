"""JSON values <-> numpy arrays by V2 datatype: numbers, booleans, bytes and ``{"b64": ..}``.

* ``{"b64": "..."}`` carries binary values; a string value of a BYTES tensor is its UTF-8 text.
* JSON ``null`` in a floating-point input is NaN, which XGBoost and other NaN-aware models
  read as *missing*.
* Strings are never silently turned into numbers, floats never into integers, and booleans
  never into numbers (nor numbers into booleans).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np
import orjson

from ..errors import InvalidInput
from ..types import Tensor, TensorSpec
from .dtypes import numpy_dtype, out_of_range
from .printing import b64_value


def as_bytes(value: Any) -> bytes:
    """A BYTES element as bytes (text as UTF-8)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return str(value).encode("utf-8")


def is_b64(value: Any) -> bool:
    """Whether *value* is a ``{"b64": "<text>"}`` object (exactly that one key)."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def b64_decode(value: Any, name: str) -> bytes:
    """Decode ``{"b64": "..."}``; raise :class:`InvalidInput` naming the input otherwise."""
    text = value.get("b64") if isinstance(value, dict) else None
    if not isinstance(text, str):
        raise InvalidInput(f"input {name!r}: 'b64' must hold a base64 string")
    data = b64_bytes(text)
    if data is None:
        raise InvalidInput(f"input {name!r}: invalid base64 data")
    return data


def b64_bytes(text: str) -> bytes | None:
    """Standard base64 *text* decoded (padding optional, as TF Serving's decoder allows);
    ``None`` when it is not base64."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def has_booleans(values: Any) -> bool:
    """Whether the JSON *values* (nested lists) hold ``true`` or ``false`` anywhere.

    numpy reads ``[true, 2]`` as ``[1, 2]``; orjson prints the values back at C speed and
    the tokens show. Numbers print without ``t`` and ``f``, so a text with neither letter
    (one ``memchr`` each) needs no search for the tokens (about 330 ns each for 20 numbers).
    Values orjson cannot print are walked in Python.
    """
    if isinstance(values, np.ndarray):
        return bool(values.dtype.kind == "b")
    try:
        text = orjson.dumps(values)
    except TypeError:  # integers over 64 bits
        return _walk_for_booleans(values)
    if b"t" not in text and b"f" not in text:
        return False
    return b"true" in text or b"false" in text


def _walk_for_booleans(values: Any) -> bool:
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            return True
        if isinstance(item, list):
            stack.extend(item)
    return False


def to_array(values: Any, datatype: str, name: str, missing: bool = False) -> Tensor:
    """Decode JSON *values* (nested lists or a scalar) into an array of *datatype*.
    *missing*: ``null`` in BYTES values is a missing value, ``None`` (a table's text
    column); elsewhere it is refused."""
    if datatype == "BYTES":
        return _bytes_array(values, name, missing)
    dtype = numpy_dtype(datatype, name)
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"input {name!r}: {_shape_problem(exc)}")
    kind = array.dtype.kind
    if kind == "O":
        array = _object_to_numbers(array, dtype, name)
        kind = array.dtype.kind
    if kind in "US":
        raise InvalidInput(f"input {name!r}: expected {datatype} values, got strings")
    if dtype.kind == "b":
        if kind != "b":
            raise InvalidInput(f"input {name!r}: expected BOOL values (true/false)")
        return array
    if kind == "b" or has_booleans(values):
        raise InvalidInput(f"input {name!r}: expected {datatype} values, got booleans")
    if dtype.kind in "iu" and kind == "f":
        raise InvalidInput(f"input {name!r}: expected {datatype} integers, got fractions")
    if past_range(array, dtype):
        raise InvalidInput(f"input {name!r}: value out of range for {datatype}")
    return array.astype(dtype, copy=False)


def past_range(array: Tensor, dtype: np.dtype[Any]) -> bool:
    """Whether casting numeric *array* to *dtype* would change a value's magnitude: an
    integer past an integer type's range (it would wrap), a finite number past a float
    type's largest (it would become infinite)."""
    if dtype.kind in "iu":
        return out_of_range(array, dtype)
    return dtype.kind in "fV" and dtype.itemsize < 8 and _too_large(array, dtype)


def _too_large(array: Tensor, dtype: np.dtype[Any]) -> bool:
    """Whether a finite number of *array* is past the largest of float *dtype*."""
    if not array.size:
        return False
    largest = _largest(dtype)
    if array.dtype.kind == "f":  # the usual case, in two numpy calls: every value within
        peak = np.abs(array).max()  # NaN when any is; then the whole check below
        if peak <= largest:
            return False
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(array.astype(np.float64))
    finite = magnitude[np.isfinite(magnitude)]
    return bool(finite.size) and float(finite.max()) > largest


def _largest(dtype: np.dtype[Any]) -> float:
    """The largest finite value of float *dtype* (bfloat16's from ml_dtypes)."""
    try:
        return float(np.finfo(dtype).max)
    except ValueError:
        import ml_dtypes

        return float(ml_dtypes.finfo(dtype).max)  # type: ignore[no-untyped-call]  # untyped lib


def _object_to_numbers(array: Tensor, dtype: np.dtype[Any], name: str) -> Tensor:
    """Numbers mixed with ``null`` (NaN for floats); anything else is refused."""
    for value in array.flat:
        if value is None:
            if dtype.kind != "f":
                raise InvalidInput(f"input {name!r}: null is only allowed in float inputs")
        elif isinstance(value, (str, bytes, dict)):
            raise InvalidInput(f"input {name!r}: expected numbers, got {type(value).__name__}")
        elif isinstance(value, list):
            raise InvalidInput(f"input {name!r}: ragged nested lists; every row must have "
                               "the same length")
        elif not isinstance(value, (int, float, bool)):
            raise InvalidInput(f"input {name!r}: expected numbers")
    try:
        return array.astype(np.float64 if dtype.kind == "f" else dtype)
    except (OverflowError, ValueError, TypeError):
        raise InvalidInput(f"input {name!r}: value out of range for {dtype}")


def _shape_problem(exc: Exception) -> str:
    text = str(exc)
    if "inhomogeneous" in text or "sequence" in text:
        return "ragged nested lists; every row must have the same length"
    if "dimension" in text:
        return "nested too deeply"
    return "values are not a rectangular array of numbers"


def _bytes_array(values: Any, name: str, missing: bool = False) -> Tensor:
    shape = dense_shape(values)
    leaves: list[Any] = []
    _collect(values, shape, 0, leaves, name)
    for index, value in enumerate(leaves):
        if isinstance(value, str):
            leaves[index] = value.encode("utf-8")
        elif isinstance(value, bytes) or (missing and value is None):  # bytes: gRPC's fields
            pass
        elif is_b64(value):
            leaves[index] = b64_decode(value, name)
        else:
            raise InvalidInput(f"input {name!r}: expected strings or {{\"b64\": ...}} values, "
                               f"got {type(value).__name__}")
    return object_array(leaves, shape)


def dense_shape(value: Any) -> tuple[int, ...]:
    """The shape nested lists claim: each level's length, read down the first items."""
    shape: list[int] = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return tuple(shape)


def _collect(value: Any, shape: tuple[int, ...], level: int, leaves: list[Any],
             name: str) -> None:
    """Append the leaves of *value* to *leaves*, checking it fills *shape* exactly."""
    if level == len(shape):
        if isinstance(value, list):
            raise InvalidInput(f"input {name!r}: ragged nested lists")
        leaves.append(value)
        return
    if not isinstance(value, list) or len(value) != shape[level]:
        raise InvalidInput(f"input {name!r}: ragged nested lists; every row must have the "
                           "same length")
    if level + 1 == len(shape):
        if any(isinstance(item, list) for item in value):
            raise InvalidInput(f"input {name!r}: ragged nested lists")
        leaves.extend(value)
        return
    for item in value:
        _collect(item, shape, level + 1, leaves, name)


def object_array(leaves: list[Any], shape: tuple[int, ...]) -> Tensor:
    """An object array of *shape* holding *leaves* in row-major order."""
    array = np.empty(len(leaves), dtype=object)
    array[:] = leaves
    return array.reshape(shape)


def check_shape(array: Tensor, spec: TensorSpec) -> None:
    """Raise :class:`InvalidInput` unless *array* fits *spec*'s shape (-1 fits any size)."""
    if spec.shape is None:
        return
    expected, shape = spec.shape, array.shape
    fits = len(expected) == len(shape)
    for want, got in zip(expected, shape):  # a loop: any() over a generator costs more
        if want != got and want != -1:
            fits = False
            break
    if not fits:
        raise InvalidInput(f"input {spec.name!r}: expected shape {list(expected)}, "
                           f"got {list(shape)}")


def json_value(array: Tensor, name: str = "") -> Any:
    """An output array as plain JSON values: bytes become UTF-8 text, or ``{"b64": ...}``
    when the output's name ends in ``_bytes`` or the bytes are not text."""
    if array.dtype.kind not in "OSU":
        return array.tolist()
    as_b64 = name.endswith("_bytes")

    def text(value: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            if not as_b64:
                try:
                    return value.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return b64_value(value)
        return value.item() if isinstance(value, np.generic) else value

    if array.ndim == 0:
        return text(array.item())
    return np.frompyfunc(text, 1, 1)(array).tolist()
