"""Row and columnar JSON <-> named tensors, with TF Serving's rules and texts.

One decoder for every protocol that sends rows of instances (TF Serving's ``instances`` and
``inputs``, AI Platform's ``instances``, the instances door of tensor predictors): it follows
``json_tensor.cc`` (``FillTensorMapFromInstancesList``, ``FillTensorMapFromInputsMap``,
``FillTensorProto``): a tensor's shape is read down the first items, every leaf is converted
by the input's dtype, and errors carry TF Serving's wording. numpy converts well-formed
values at C speed; only a request that fails is walked in Python, to name what is wrong.

A tabular signature (the columns of a table, ``Signature.tabular``) also takes plain rows
of one value per column, by position, where TF Serving wants objects naming the inputs.

Where flask-predict differs from TF Serving, on purpose: ``null`` in a float input is NaN
(a missing value for XGBoost), and integers out of range for an 8- or 16-bit input are
refused instead of wrapped.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import orjson

from ..errors import InvalidInput, Unimplemented
from ..types import Signature, Tensor, TensorSpec
from .arrays import b64_bytes, dense_shape, has_booleans, is_b64, object_array
from .dtypes import FLOAT64, INT64_MAX, INT64_MIN, TF_NAMES, V2_TO_NUMPY, out_of_range
from .preview import preview

_INT32 = (-(2**31), 2**31 - 1)
_INTEGER_LIMITS = {"INT8": _INT32, "INT16": _INT32, "INT32": _INT32, "UINT8": _INT32,
                   "INT64": (INT64_MIN, INT64_MAX), "UINT32": (0, 2**32 - 1),
                   "UINT64": (0, 2**64 - 1)}
"""Integers TF Serving's JSON reader takes for each dtype (rapidjson's IsInt, IsInt64...)."""
_LOSSLESS = {"FP32": 2**24 - 1, "FP64": 2**53 - 1}
"""Largest integer a float input takes without loss (TF Serving's ``IsLosslessDecimal``)."""
_FLOAT_MAX = {"FP32": float(np.finfo(np.float32).max), "FP64": math.inf}
"""Largest finite value a float input takes (a larger double is not lossless either)."""
_SUPPORTED = {"FP32", "FP64", "BOOL", "BYTES", *_INTEGER_LIMITS}
"""Input dtypes TF Serving converts from JSON; others answer 501 (``Conversion of ...``)."""


def is_named(value: Any) -> bool:
    """An instance object naming inputs (not a ``{"b64": ...}`` value)."""
    return isinstance(value, dict) and not is_b64(value)


# --- requests -------------------------------------------------------------------------------

def rows_to_tensors(instances: Any, signature: Signature) -> dict[str, Tensor]:
    """Row format: one value per instance for a single input, or one object per instance
    naming every input (required when there are several)."""
    if not isinstance(instances, list):
        raise InvalidInput(f"JSON Value: {preview(instances)} Expecting 'instances' to be an "
                           "list/array")
    if not instances:
        raise InvalidInput("JSON Value: [] No values in 'instances' array")
    specs = {spec.name: spec for spec in signature.inputs}
    if not isinstance(instances[0], dict) and len(specs) > 1:
        if signature.tabular:
            return _positional_rows(instances, specs, "instances")
        raise InvalidInput("instances is a plain list, but expecting list of objects as "
                           "multiple input tensors required as per tensorinfo_map")
    if is_named(instances[0]):
        return _named_rows(instances, specs, signature.tabular)
    spec = signature.inputs[0]
    fast = _fast_tensor(instances, spec)
    if fast is not None:
        return {spec.name: fast}
    for index, item in enumerate(instances):
        if is_named(item):
            raise InvalidInput(f"Expecting value/list but got object at item {index} of "
                               "input list")
    return {spec.name: _batch(instances, spec, lambda index: f"{index}")}


def _named_rows(instances: list[Any], specs: Mapping[str, TensorSpec],
                tabular: bool) -> dict[str, Tensor]:
    columns: dict[str, list[Any]] = {name: [] for name in specs}
    for index, item in enumerate(instances):
        if not is_named(item):
            raise InvalidInput(f"Expecting object but got list at item {index} of input list")
        for name, value in item.items():
            if name not in specs:
                shown = name if len(name) <= 200 else name[:200] + "..."  # cut, not whole
                raise InvalidInput(f"Failed to process element: {index} key: {shown} of "
                                   "'instances' list. Error: INVALID_ARGUMENT: JSON object: "
                                   f"does not have named input: {shown}")
            columns[name].append(value)
        if item.keys() != specs.keys():
            raise InvalidInput(f"Failed to process element: {index} of 'instances' list. "
                               f"JSON object: {preview(item)} keys must be equal to: "
                               f"{','.join(sorted(specs))}")
    return _column_tensors(columns, specs, "instances", tabular)


def _positional_rows(rows: list[Any], specs: Mapping[str, TensorSpec],
                     key: str) -> dict[str, Tensor]:
    """Plain rows of a tabular signature (``Signature.tabular``): each row one value per
    input, in the signature's order."""
    columns: dict[str, list[Any]] = {name: [] for name in specs}
    width = len(specs)
    for index, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise InvalidInput(f"Failed to process element: {index} of '{key}' list. "
                               f"Expecting a row of {width} values, one per column of the "
                               f"model ({','.join(specs)}), got: {preview(row)}")
        for values, value in zip(columns.values(), row):
            values.append(value)
    return _column_tensors(columns, specs, key, True)


def _column_tensors(columns: Mapping[str, list[Any]], specs: Mapping[str, TensorSpec],
                    key: str, tabular: bool) -> dict[str, Tensor]:
    """Each input's values, one per instance, stacked into its tensor."""
    tensors = {}
    for name, values in columns.items():
        spec = specs[name]
        if _missing_text(values, spec, tabular):
            tensors[name] = _text_with_missing(values, spec, key, name)
            continue
        fast = _fast_tensor(values, spec)
        tensors[name] = fast if fast is not None else _batch(
            values, spec, lambda index, name=name: f"{index} key: {name}", key)
    return tensors


def _missing_text(values: Any, spec: TensorSpec, tabular: bool) -> bool:
    """A list of a tabular signature's text column that holds ``null``."""
    return tabular and spec.datatype == "BYTES" and isinstance(values, list) and None in values


def _text_with_missing(values: list[Any], spec: TensorSpec, key: str, name: str) -> Tensor:
    """A text column of a tabular signature holding ``null``: a missing value (``None``),
    where TF Serving refuses null for a string."""
    present = [index for index, value in enumerate(values) if value is not None]
    column = np.full(len(values), None, dtype=object)
    if present:
        texts = _batch([values[index] for index in present], spec,
                       lambda index: f"{present[index]} key: {name}", key)
        if texts.ndim != 1:
            raise InvalidInput(f"Failed to process element: {present[0]} key: {name} of "
                               f"'{key}' list. Error: INVALID_ARGUMENT: lists among nulls: "
                               "a row holds one value of this column")
        column[present] = texts
    return column


def _batch(items: list[Any], spec: TensorSpec, where: Any, key: str = "instances") -> Tensor:
    """The instances of one input stacked, TF Serving's way: each converted on its own, all
    of the same size and shape (``AddInstanceItem``)."""
    parts: list[Tensor] = []
    for index, item in enumerate(items):
        try:
            part = tensor_from_json(item, spec)
        except (InvalidInput, Unimplemented) as exc:
            status = "UNIMPLEMENTED" if isinstance(exc, Unimplemented) else "INVALID_ARGUMENT"
            raise InvalidInput(f"Failed to process element: {where(index)} of '{key}' "
                               f"list. Error: {status}: {exc.message}")
        if parts and part.shape != parts[0].shape:
            first = parts[0]
            detail = (f"Expecting tensor size: {first.size} but got: {part.size}"
                      if part.size != first.size else
                      f"Expecting shape {_shape_text(first.shape)} but got: "
                      f"{_shape_text(part.shape)}")
            raise InvalidInput(f"Failed to process element: {where(index)} of '{key}' "
                               f"list. Error: INVALID_ARGUMENT: {detail}")
        parts.append(part)
    return np.stack(parts)


def columns_to_tensors(inputs: Any, signature: Signature) -> dict[str, Tensor]:
    """Columnar format: the only input's value, or an object naming every input (extra keys
    are ignored, as in TF Serving)."""
    specs = {spec.name: spec for spec in signature.inputs}
    if is_named(inputs):
        for name in specs:
            if name not in inputs:
                raise InvalidInput(f"Missing named input: {name} in 'inputs' object.")
        return {name: _text_with_missing(inputs[name], spec, "inputs", name)
                if _missing_text(inputs[name], spec, signature.tabular)
                else tensor_from_json(inputs[name], spec) for name, spec in specs.items()}
    if len(specs) != 1:
        if signature.tabular and isinstance(inputs, list) and inputs:
            return _positional_rows(inputs, specs, "inputs")
        raise InvalidInput("inputs is a plain value/list, but expecting an object as multiple "
                           "input tensors required as per tensorinfo_map")
    (spec,) = specs.values()
    return {spec.name: tensor_from_json(inputs, spec)}


def tensor_from_json(value: Any, spec: TensorSpec) -> Tensor:
    """One tensor from a JSON value (``FillTensorProto``): its shape is read down the first
    items; every list must have that length at its level and every leaf the input's type."""
    fast = _fast_tensor(value, spec)
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


def _fast_tensor(value: Any, spec: TensorSpec) -> Tensor | None:
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
        return array.astype(dtype, copy=False) if _lossless(array, datatype) else None
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


def _lossless(array: Tensor, datatype: str) -> bool:
    """Whether every number of *array* fits *datatype* (FP32/FP64) as TF Serving's
    ``IsLosslessDecimal`` asks: integers up to 2**24-1 / 2**53-1, floats within range.
    A whole number past the integer limit may have been written either way: the JSON walk,
    which knows, decides."""
    if not array.size:
        return True
    if array.dtype.kind in "iu":
        return max(int(array.max()), -int(array.min())) <= _LOSSLESS[datatype]
    if float(np.abs(array).max()) <= _LOSSLESS[datatype]:  # NaN: False, the walk below
        return True
    finite = np.abs(array[np.isfinite(array)])
    big = finite[finite > _LOSSLESS[datatype]]
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
    elif datatype in _LOSSLESS:
        if value is None:
            return math.nan
        if isinstance(value, int):
            if abs(value) > _LOSSLESS[datatype]:
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


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(size) for size in shape) + "]"


def matrix_to_tensors(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """What :func:`rows_to_tensors` makes of the rows of a ``number_matrix``, or ``None``
    unless *signature* has one FP32/FP64 input or FP32/FP64 columns (a tabular one): other
    dtypes need the JSON values.

    An FP64 input takes the matrix as it is: ``number_matrix`` answers only float64 values
    under 2**53, all lossless there."""
    if len(signature.inputs) != 1:
        return _matrix_columns(matrix, signature)
    spec = signature.inputs[0]
    if spec.datatype == "FP64" and matrix.dtype == FLOAT64:
        return {spec.name: matrix}
    if spec.datatype not in _LOSSLESS or not _lossless(matrix, spec.datatype):
        return None
    return {spec.name: matrix.astype(V2_TO_NUMPY[spec.datatype], copy=False)}


def _matrix_columns(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """The columns of a ``number_matrix`` of rows for a tabular signature of FP32/FP64
    columns (``Signature.tabular``), else ``None``."""
    specs = signature.inputs
    if not signature.tabular or matrix.ndim != 2 or matrix.shape[1] != len(specs):
        return None
    columns = {}
    for index, spec in enumerate(specs):
        column = matrix[:, index]
        if spec.datatype not in _LOSSLESS or not _lossless(column, spec.datatype):
            return None
        columns[spec.name] = column.astype(V2_TO_NUMPY[spec.datatype], copy=False)
    return columns
