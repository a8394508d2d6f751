"""One JSON value as a tensor, with TF Serving's rules and texts (``json_tensor.cc``'s
``FillTensorProto``): its shape is read down the first items, every leaf is converted by the
input's dtype, and errors carry TF Serving's wording. numpy converts a well-formed value at C
speed (:func:`fast_tensor`); only a value that fails is walked in Python, to name what is
wrong."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import orjson

from ..errors import InvalidInput, Unimplemented
from ..types import Tensor, TensorSpec
from .arrays import b64_bytes, dense_shape, has_booleans, is_b64, object_array
from .dtypes import INT64_MAX, INT64_MIN, TF_NAMES, V2_TO_NUMPY, out_of_range
from .preview import preview

_INT32 = (-(2**31), 2**31 - 1)
_INTEGER_LIMITS = {"INT8": _INT32, "INT16": _INT32, "INT32": _INT32, "UINT8": _INT32,
                   "INT64": (INT64_MIN, INT64_MAX), "UINT32": (0, 2**32 - 1),
                   "UINT64": (0, 2**64 - 1)}
"""Integers TF Serving's JSON reader takes for each dtype (rapidjson's IsInt, IsInt64...)."""
LOSSLESS = {"FP32": 2**24 - 1, "FP64": 2**53 - 1}
"""Largest integer a float input takes without loss (TF Serving's ``IsLosslessDecimal``)."""
_FLOAT_MAX = {"FP32": float(np.finfo(np.float32).max), "FP64": math.inf}
"""Largest finite value a float input takes (a larger double is not lossless either)."""
_SUPPORTED = {"FP32", "FP64", "BOOL", "BYTES", *_INTEGER_LIMITS}
"""Input dtypes TF Serving converts from JSON; others answer 501 (``Conversion of ...``)."""


def tensor_from_json(value: Any, spec: TensorSpec) -> Tensor:
    """One tensor from a JSON value (``FillTensorProto``): its shape is read down the first
    items; every list must have that length at its level and every leaf the input's type."""
    fast = fast_tensor(value, spec)
    if fast is not None:
        return fast
    datatype = spec.datatype
    if datatype not in _SUPPORTED:
        leaf = _first_leaf(value)
        raise Unimplemented(f"Conversion of JSON Value: {preview(leaf)} to type: "
                            f"{TF_NAMES.get(datatype, datatype)}")
    shape = dense_shape(value)
    leaves: list[Any] = []
    _fill(value, 0, shape, leaves)
    converted = [_leaf(leaf, datatype) for leaf in leaves]
    if datatype == "BYTES":
        return object_array(converted, shape)
    return np.asarray(converted, dtype=V2_TO_NUMPY[datatype]).reshape(shape)


def fast_tensor(value: Any, spec: TensorSpec) -> Tensor | None:
    """*value* converted by numpy when it is certainly well formed for *spec*, else None."""
    datatype = spec.datatype
    dtype = V2_TO_NUMPY.get(datatype)
    if dtype is None or datatype == "BYTES" or datatype not in _SUPPORTED:
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    kind = array.dtype.kind
    if datatype == "BOOL":
        return array if kind == "b" else None
    if kind == "O" and dtype.kind == "f":
        numbers = _numbers_and_nulls(value)
        if numbers is None:
            return None
        array, kind = numbers, "f"
    if kind not in "iuf" or has_booleans(value):
        return None
    if dtype.kind == "f":
        return array.astype(dtype, copy=False) if lossless(array, datatype) else None
    if kind == "f" or out_of_range(array, dtype):
        return None
    return array.astype(dtype, copy=False)


def _numbers_and_nulls(value: Any) -> Tensor | None:
    """Nested lists of numbers and ``null`` as float64, ``null`` as NaN; ``None`` when they
    hold anything else (strings, objects, booleans, integers over 64 bits) or are ragged."""
    try:
        text = orjson.dumps(value)
    except TypeError:
        return None
    if b'"' in text or b"true" in text or b"false" in text:
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError):
        return None


def lossless(array: Tensor, datatype: str) -> bool:
    """Whether every number of *array* fits *datatype* (FP32/FP64) as TF Serving's
    ``IsLosslessDecimal`` asks: integers up to 2**24-1 / 2**53-1, floats within range.
    A whole number past the integer limit may have been written either way: the JSON walk,
    which knows, decides."""
    if not array.size:
        return True
    if array.dtype.kind in "iu":
        return max(int(array.max()), -int(array.min())) <= LOSSLESS[datatype]
    if float(np.abs(array).max()) <= LOSSLESS[datatype]:  # NaN: False, the walk below
        return True
    finite = np.abs(array[np.isfinite(array)])
    big = finite[finite > LOSSLESS[datatype]]
    return not big.size or (float(big.max()) <= _FLOAT_MAX[datatype] and
                            not (big == np.floor(big)).any())


def _fill(value: Any, level: int, shape: tuple[int, ...], leaves: list[Any]) -> None:
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise InvalidInput(f"JSON Value: {preview(value)} found at incorrect level: "
                               f"{level + 1} in the JSON DOM. Expected at level: {rank}")
        leaves.append(value)
        return
    if level >= rank:
        raise InvalidInput(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise InvalidInput(f"Encountered list at unexpected size: {len(value)} at level: "
                           f"{level} expected size: {shape[level]}")
    for item in value:
        _fill(item, level + 1, shape, leaves)


def _first_leaf(value: Any) -> Any:
    while isinstance(value, list) and value:
        value = value[0]
    return value


def _leaf(value: Any, datatype: str) -> Any:
    """One JSON leaf as a value of *datatype* (``AddValueToTensor``)."""
    if isinstance(value, int) and not INT64_MIN <= value <= 2**64 - 1:
        value = float(value)  # rapidjson reads an integer past 64 bits as a double
    if datatype == "BYTES":
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, dict):
            if not is_b64(value):
                raise InvalidInput(f"JSON Value: {preview(value)} not formatted correctly "
                                   "for base64 data")
            data = b64_bytes(value["b64"])
            if data is None:
                raise InvalidInput("Unable to base64 decode")
            return data
    elif datatype == "BOOL":
        if isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        pass
    elif datatype in LOSSLESS:
        if value is None:
            return math.nan
        if isinstance(value, int):
            if abs(value) > LOSSLESS[datatype]:
                raise _lossy(value, datatype)
            return value
        if isinstance(value, float):
            if math.isfinite(value) and abs(value) > _FLOAT_MAX[datatype]:
                raise _lossy(value, datatype)
            return value
    elif isinstance(value, int):
        low, high = _INTEGER_LIMITS[datatype]
        if low <= value <= high and not out_of_range(np.asarray(value), V2_TO_NUMPY[datatype]):
            return value
    raise InvalidInput(f"JSON Value: {preview(value)} Type: {json_type(value)} is not of "
                       f"expected type: {TF_NAMES[datatype]}")


def _lossy(value: Any, datatype: str) -> InvalidInput:
    return InvalidInput(f"Cannot convert JSON value: {preview(value)} to "
                        f"{TF_NAMES[datatype]} without loss of precision.")


def json_type(value: Any) -> str:
    """rapidjson's type name, as ``JsonTypeString`` prints it."""
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(size) for size in shape) + "]"
