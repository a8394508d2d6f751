"""The grps ``GrpsMessage`` in JSON: decode requests, encode responses. No Flask here.

The JSON is protobuf's JSON mapping of ``grps.protos.v1.GrpsMessage`` as grps prints it:
snake_case field names, enums by name, int64 values as strings, bytes as base64, fields
holding their default value left out. Requests may give enums as names or numbers and
int64 values as numbers or strings.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ... import codecs
from ...errors import InvalidInput, PredictorFailed
from ...types import Signature, Tensor
from .gmap import NON_FINITE, decode_gmap, encode_gmap, is_gmap, non_finite_text, text_value

OK_STATUS = {"code": 200, "msg": "OK", "status": "SUCCESS"}

DTYPES: dict[str, tuple[int, str, str]] = {
    "DT_UINT8": (1, "UINT8", "flat_uint8"),
    "DT_INT8": (2, "INT8", "flat_int8"),
    "DT_INT16": (3, "INT16", "flat_int16"),
    "DT_INT32": (4, "INT32", "flat_int32"),
    "DT_INT64": (5, "INT64", "flat_int64"),
    "DT_FLOAT16": (6, "FP16", "flat_float16"),
    "DT_FLOAT32": (7, "FP32", "flat_float32"),
    "DT_FLOAT64": (8, "FP64", "flat_float64"),
    "DT_STRING": (9, "BYTES", "flat_string"),
}
"""grps ``DataType`` name -> (enum number, V2 datatype, ``flat_*`` field)."""

DTYPE_NAMES = {number: name for name, (number, _, _) in DTYPES.items()}
V2_TO_DTYPE = {v2: name for name, (_, v2, _) in DTYPES.items()}
V2_TO_DTYPE.update({"BOOL": "DT_UINT8", "UINT16": "DT_INT32", "UINT32": "DT_INT64",
                    "UINT64": "DT_INT64", "BF16": "DT_FLOAT32"})
"""V2 datatype -> the grps dtype that carries it (types grps lacks travel widened)."""

FIELD_ALIASES = {"flat_float64": "flat_double"}
"""grps's interface document writes ``flat_double``; it is read as ``flat_float64``."""

PAYLOAD_FIELDS = ("str_data", "gtensors", "gmap")
PROBABILITY_OUTPUTS = ("predict_proba", "probabilities")
"""Classifier outputs sent first, as DT_FLOAT32, so that ``return-ndarray`` shows them."""



@dataclass
class GrpsRequest:
    """A decoded request message: the model id it names and its one payload."""

    model: str
    """``name`` or ``name-version`` from the body; empty when the body names none."""
    kind: str
    """``str_data``, ``bin_data``, ``gtensors``, ``ndarray`` or ``gmap``."""
    value: Any
    """``str``, ``bytes``, ``list[tuple[name, array]]`` (tensors) or a gmap dict."""

    @property
    def is_tensors(self) -> bool:
        return self.kind in ("gtensors", "ndarray")

    def instances(self) -> list[Any]:
        """What a custom predictor receives: one instance, the payload itself. Tensors come
        as numpy arrays, as grps hands a converter-less model its message: the array itself
        for one unnamed tensor (``ndarray``), a list of arrays for several unnamed ones, a
        dict name -> array for named ones."""
        if not self.is_tensors:
            return [self.value]
        tensors: list[tuple[str, Tensor]] = self.value
        if tensors and tensors[0][0]:
            return [dict(tensors)]
        if len(tensors) == 1:
            return [tensors[0][1]]
        return [[array for _, array in tensors]]


# --- requests ---------------------------------------------------------------------------------

def decode_message(body: Any) -> GrpsRequest:
    """Decode a JSON ``GrpsMessage``, checking payload fields in grps's order."""
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object (a GrpsMessage)")
    model = body.get("model") or ""
    if not isinstance(model, str):
        raise InvalidInput("'model' must be a string such as \"name-version\"")
    present = [field for field in PAYLOAD_FIELDS if body.get(field)]
    if len(present) > 1:
        raise InvalidInput(f"only one payload field may be set, got {present}")
    if present:
        kind = present[0]
        value = body[kind]
        if kind == "str_data":
            if not isinstance(value, str):
                raise InvalidInput("'str_data' must be a string")
            return GrpsRequest(model, kind, value)
        if kind == "gtensors":
            return GrpsRequest(model, kind, decode_gtensors(value))
        return GrpsRequest(model, kind, decode_gmap(value))
    if body.get("ndarray"):
        return ndarray_request(model, body["ndarray"])
    if "bin_data" in body:
        raise InvalidInput("bin_data should use application/octet-stream format.")
    raise InvalidInput("No legal field in json: set one of str_data, gtensors, gmap or "
                       "ndarray, or send bin_data as application/octet-stream.")


def ndarray_request(model: str, values: Any) -> GrpsRequest:
    """An ``ndarray`` message: one unnamed float32 tensor from JSON values (or a matrix the
    body was parsed into)."""
    return GrpsRequest(model, "ndarray", [("", codecs.to_array(values, "FP32", "ndarray"))])


def decode_gtensors(value: Any) -> list[tuple[str, Tensor]]:
    """``{"tensors": [...]}`` as (name, array) pairs; names are all set or all empty."""
    tensors = value.get("tensors") if isinstance(value, dict) else None
    if not isinstance(tensors, list) or not tensors:
        raise InvalidInput("'gtensors' must be {\"tensors\": [...]} with at least one tensor")
    return check_names([decode_tensor(tensor, index) for index, tensor in enumerate(tensors)])


def check_names(decoded: list[tuple[str, Tensor]]) -> list[tuple[str, Tensor]]:
    """*decoded* tensors, whose names must be all set (and unique) or all empty."""
    named = [bool(name) for name, _ in decoded]
    if any(named) and not all(named):
        raise InvalidInput("tensor names must be all set or all empty")
    if all(named) and len({name for name, _ in decoded}) != len(decoded):
        raise InvalidInput("tensor names must be unique")
    return decoded


def decode_tensor(tensor: Any, index: int) -> tuple[str, Tensor]:
    """One ``GenericTensor``; only the ``flat_*`` field of its dtype is read."""
    if not isinstance(tensor, dict):
        raise InvalidInput(f"tensor {index} must be an object")
    name = tensor.get("name") or ""
    if not isinstance(name, str):
        raise InvalidInput(f"tensor {index}: 'name' must be a string")
    label = repr(name) if name else str(index)
    dtype = dtype_name(tensor.get("dtype"), label)
    _, datatype, field = DTYPES[dtype]
    shape = tensor.get("shape", [])
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise InvalidInput(f"tensor {label}: 'shape' must be a list of sizes (integers >= 0)")
    flat = tensor.get(field)
    if flat is None and field in FIELD_ALIASES:
        flat = tensor.get(FIELD_ALIASES[field])
    flat = [] if flat is None else flat
    if not isinstance(flat, list):
        raise InvalidInput(f"tensor {label}: '{field}' must be a list")
    check_count(len(flat), shape, dtype, label)
    where = name or f"tensor {index}"
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in flat):
            raise InvalidInput(f"tensor {label}: 'flat_string' must hold strings")
        return name, codecs.to_array(flat, datatype, where).reshape(shape)
    try:
        array = codecs.to_array(flat, datatype, where)
    except InvalidInput:
        if not any(isinstance(v, str) for v in flat):
            raise
        array = codecs.to_array([_number(v, datatype, label) for v in flat], datatype, where)
    return name, array.reshape(shape)


def check_count(count: int, shape: list[int], dtype: str, label: str) -> None:
    """*count* values fill *shape* exactly."""
    size = math.prod(shape)
    field = DTYPES[dtype][2]
    if not count and size:
        raise InvalidInput(f"tensor {label}: {dtype} data is empty: '{field}' holds no values")
    if count != size:
        raise InvalidInput(f"tensor {label}: shape {codecs.preview(shape)} needs {size} values, "
                           f"got {count} in '{field}'")


def dtype_name(value: Any, label: str) -> str:
    """A tensor's ``dtype`` (a name, or its number) as its name."""
    if isinstance(value, int) and not isinstance(value, bool) and value in DTYPE_NAMES:
        return DTYPE_NAMES[value]
    if isinstance(value, str) and value in DTYPES:
        return value
    raise InvalidInput(f"tensor {label}: 'dtype' must be one of {list(DTYPES)} (or its "
                       f"number 1-9), got {codecs.preview(value)}")


def _number(value: Any, datatype: str, label: str) -> Any:
    """A protobuf JSON number: numbers, or strings holding one (int64, ``"NaN"``)."""
    if not isinstance(value, str):
        return value
    if datatype.startswith("FP") and value in NON_FINITE:
        return NON_FINITE[value]
    try:
        return int(value) if not datatype.startswith("FP") else float(value)
    except ValueError:
        raise InvalidInput(f"tensor {label}: {codecs.preview(value)} is not a number")


def bind_inputs(tensors: Sequence[tuple[str, Tensor]], signature: Signature) -> dict[str, Tensor]:
    """Named tensors as they are; unnamed ones to the signature's inputs, in order. A
    table's (``Signature.tabular``) one unnamed tensor is its rows, split by the model."""
    if tensors and tensors[0][0]:
        return dict(tensors)
    names = [spec.name for spec in signature.inputs]
    if signature.tabular and len(tensors) == 1 and len(names) > 1:
        return {"tensor 0": tensors[0][1]}
    if len(names) != len(tensors):
        raise InvalidInput(f"the model takes {len(names)} input(s) {names}; got "
                           f"{len(tensors)} unnamed tensor(s): name them")
    return {name: array for name, (_, array) in zip(names, tensors)}


# --- responses --------------------------------------------------------------------------------

def error_body(code: int, message: str) -> dict[str, Any]:
    return {"status": {"code": code, "msg": message, "status": "FAILURE"}}


def message(kind: str, value: Any) -> dict[str, Any]:
    """A successful response message with one payload (``bin_data`` as base64)."""
    if kind == "bin_data":
        value = base64.b64encode(value).decode("ascii")
    return {"status": OK_STATUS, kind: value}


def encode_gtensors(outputs: Mapping[str, Tensor] | Sequence[tuple[str, Tensor]]
                    ) -> dict[str, Any]:
    """Model outputs as ``{"tensors": [...]}``; probabilities first, as DT_FLOAT32. A list
    of (name, array) pairs keeps its order and may hold unnamed tensors."""
    pairs = ordered_outputs(outputs)
    return {"tensors": [encode_tensor(name, array) for name, array in pairs]}


def ordered_outputs(outputs: Mapping[str, Tensor] | Sequence[tuple[str, Tensor]]
                    ) -> list[tuple[str, Tensor]]:
    """(name, array) pairs in answer order: a mapping's probabilities first, as float32."""
    if not isinstance(outputs, Mapping):
        return [(name, np.asarray(array)) for name, array in outputs]
    pairs = []
    for name in sorted(outputs, key=lambda n: n not in PROBABILITY_OUTPUTS):
        array = np.asarray(outputs[name])
        if name in PROBABILITY_OUTPUTS and array.dtype.kind == "f":
            array = array.astype(np.float32, copy=False)
        pairs.append((name, array))
    return pairs


def encode_tensor(name: str, array: Tensor) -> dict[str, Any]:
    """One ``GenericTensor``, default fields left out."""
    dtype = tensor_dtype(name, array)
    field = DTYPES[dtype][2]
    tensor: dict[str, Any] = {}
    if name:
        tensor["name"] = name
    tensor["dtype"] = dtype
    if array.ndim:
        tensor["shape"] = list(array.shape)
    if array.size:
        tensor[field] = _json_values(flat_values(array, dtype, name), dtype)
    return tensor


def tensor_dtype(name: str, array: Tensor) -> str:
    """The grps dtype that carries output *array* (the server's failure if none does)."""
    dtype = V2_TO_DTYPE.get(codecs.datatype_of(array)) if array.dtype.kind != "O" or all(
        isinstance(v, (bytes, str)) for v in array.flat) else None
    if dtype is None:
        raise PredictorFailed(f"output {name!r}: dtype {array.dtype} has no grps DataType")
    return dtype


def flat_values(array: Tensor, dtype: str, name: str) -> Tensor | list[str]:
    """Output *array*'s values as its grps *dtype* holds them: flat, text for strings,
    float32 for the narrower floats, 0 and 1 for booleans."""
    flat = array.reshape(-1)
    datatype = DTYPES[dtype][1]
    if datatype == "BYTES":
        return [text_value(v) for v in flat.tolist()]
    if datatype == "INT64":
        if flat.dtype == np.uint64 and flat.size and int(flat.max()) > codecs.INT64_MAX:
            raise PredictorFailed(f"output {name!r}: value out of range for DT_INT64")
        return flat
    if datatype.startswith("FP"):
        return flat if datatype == "FP64" else flat.astype(np.float32, copy=False)
    return flat.astype(np.uint8) if flat.dtype.kind == "b" else flat


def _json_values(flat: Tensor | list[str], dtype: str) -> Any:
    """Flat values in protobuf's JSON: int64 as strings, non-finite floats as names."""
    if isinstance(flat, list):
        return flat
    if dtype == "DT_INT64":
        return [str(v) for v in flat.tolist()]
    if flat.dtype.kind == "f":
        if not np.isfinite(flat).all():  # protobuf JSON spells them as strings
            # str() of a float32 is its shortest text: 0.1, not 0.10000000149011612
            return [float(str(v)) if np.isfinite(v) else non_finite_text(float(v))
                    for v in flat]
        return np.ascontiguousarray(flat)
    return flat.tolist()


def encode_ndarray(outputs: Mapping[str, Tensor] | Sequence[tuple[str, Tensor]]) -> Tensor:
    """``?return-ndarray=true``: the first output (probabilities for a classifier) as a
    float32 nested array; anything else is the server's failure (500), as in grps."""
    pairs = ordered_outputs(outputs)
    if not pairs or pairs[0][1].dtype.kind != "f":
        raise PredictorFailed("No float32 tensors in output. Cannot convert to ndarray.")
    return pairs[0][1].astype(np.float32, copy=False)


def encode_predictions(predictions: Sequence[Any]) -> tuple[str, Any]:
    """A custom predictor's predictions as a payload (kind, JSON value).

    A single ``str`` is ``str_data``, a single ``bytes`` ``bin_data`` and a single dict of
    gmap fields ``gmap`` (kind ``gmap``, already encoded). Tensors come back tensor for
    tensor, dtypes, shapes and names kept (kind ``outputs``): a single numpy array is one
    unnamed tensor, a list of arrays unnamed tensors in order, a dict name -> array named
    ones. Anything else is the model output ``predictions`` (numbers stay numbers, other
    values become JSON text).
    """
    if len(predictions) == 1:
        only = predictions[0]
        tensors = _as_tensors(only)
        if tensors is not None:
            return "outputs", tensors
        if isinstance(only, str):
            return "str_data", only
        if isinstance(only, (bytes, bytearray)):
            return "bin_data", bytes(only)
        if is_gmap(only):
            return "gmap", encode_gmap(only)
    return "outputs", {"predictions": codecs.predictions_to_tensor(list(predictions))}


def _as_tensors(value: Any) -> list[tuple[str, Tensor]] | None:
    if isinstance(value, np.ndarray):
        return [("", value)]
    if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
        return [("", array) for array in value]
    if isinstance(value, dict) and value and all(
            isinstance(k, str) and k and isinstance(v, np.ndarray) for k, v in value.items()):
        return list(value.items())
    return None
