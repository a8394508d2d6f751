"""TensorFlow's protobuf values <-> numpy: ``TensorProto`` and ``tf.Example``, for TF
Serving's gRPC servicer (:mod:`.servicer`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import codecs
from ...errors import InvalidInput
from ...grpc.messages import POOL, tf
from ...types import Example, Tensor
from .wire import V2_TO_DT

_DT_NUMBERS = {value.name: value.number
               for value in POOL.FindEnumTypeByName("tensorflow.DataType").values}
TF_FIELDS: dict[str, str] = {
    "FP32": "float_val", "FP64": "double_val", "INT32": "int_val", "INT16": "int_val",
    "INT8": "int_val", "UINT8": "int_val", "UINT16": "int_val", "INT64": "int64_val",
    "UINT32": "uint32_val", "UINT64": "uint64_val", "BOOL": "bool_val", "BYTES": "string_val",
    "FP16": "half_val", "BF16": "half_val",
}
"""V2 datatype -> the typed ``TensorProto`` field holding its values."""
DT_TO_V2: dict[int, str] = {_DT_NUMBERS[dt]: v2 for v2, dt in V2_TO_DT.items()
                            if v2 in codecs.V2_TO_NUMPY}
"""``DataType`` number -> V2 datatype, for the dtypes numpy can hold."""


def dtype_name(number: int) -> str:
    """``DT_FLOAT`` for 1: the name TensorFlow prints."""
    return next((name for name, value in _DT_NUMBERS.items() if value == number), str(number))


def from_tensor_proto(proto: Any, name: str) -> Tensor:
    """A ``TensorProto`` as an array, as TensorFlow's ``Tensor::FromProto`` reads it: raw
    ``tensor_content`` bytes, or the typed field, a short list padded with its last value."""
    datatype = DT_TO_V2.get(proto.dtype)
    if datatype is None:
        raise InvalidInput(f"tensor parsing error: {name}: dtype {dtype_name(proto.dtype)} "
                           "is not supported")
    if proto.tensor_shape.unknown_rank:
        raise InvalidInput(f"tensor parsing error: {name}: the shape has an unknown rank")
    shape = tuple(dim.size for dim in proto.tensor_shape.dim)
    if any(size < 0 for size in shape):
        raise InvalidInput(f"tensor parsing error: {name}: shape {list(shape)} has a "
                           "negative dimension")
    count = math.prod(shape)
    dtype = codecs.V2_TO_NUMPY[datatype]
    if proto.tensor_content:
        if datatype == "BYTES":
            raise InvalidInput(f"tensor parsing error: {name}: send DT_STRING values in "
                               "string_val")
        if len(proto.tensor_content) != count * dtype.itemsize:
            raise InvalidInput(f"tensor parsing error: {name}: tensor_content holds "
                               f"{len(proto.tensor_content)} bytes, shape {list(shape)} of "
                               f"{dtype_name(proto.dtype)} needs {count * dtype.itemsize}")
        little = np.frombuffer(proto.tensor_content, dtype=dtype.newbyteorder("<"))
        return little.astype(dtype).reshape(shape)
    values = getattr(proto, TF_FIELDS[datatype])
    if len(values) > count:
        raise InvalidInput(f"tensor parsing error: {name}: {len(values)} values for shape "
                           f"{list(shape)}")
    if datatype == "BYTES":
        array = np.empty(count, dtype=object)
        array[:len(values)] = list(values)
        array[len(values):] = values[-1] if len(values) else b""
        return array.reshape(shape)
    flat = np.asarray(list(values))
    wanted = np.dtype(np.uint16) if datatype in ("FP16", "BF16") else dtype
    if wanted.kind in "iu" and flat.size:
        info = np.iinfo(wanted)
        if flat.min() < info.min or flat.max() > info.max:
            raise InvalidInput(f"tensor parsing error: {name}: a value is out of range for "
                               f"{dtype_name(proto.dtype)}")
    flat = flat.astype(wanted) if flat.size else np.zeros(0, wanted)
    if wanted != dtype:  # half_val holds the 16-bit patterns of DT_HALF and DT_BFLOAT16
        flat = flat.view(dtype)
    if len(flat) < count:
        fill = flat[-1] if len(flat) else np.zeros((), dtype)
        flat = np.concatenate([flat, np.full(count - len(flat), fill, dtype)])
    return flat.reshape(shape)


def to_tensor_proto(array: Tensor, proto: Any) -> None:
    """Fill *proto* (a ``TensorProto``) from *array*, values in the typed field as TF
    Serving answers by default."""
    datatype = codecs.datatype_of(array)
    proto.dtype = _DT_NUMBERS[V2_TO_DT[datatype]]
    for size in array.shape:
        proto.tensor_shape.dim.add().size = size
    flat = array.reshape(-1)
    field = getattr(proto, TF_FIELDS[datatype])
    if datatype == "BYTES":
        field.extend([codecs.as_bytes(value) for value in flat.tolist()])
    elif datatype in ("FP16", "BF16"):
        field.extend(flat.view(np.uint16).tolist())
    else:
        field.extend(flat.tolist())


# --- tf.Example -------------------------------------------------------------------------------

def from_example(proto: Any) -> dict[str, Tensor]:
    """One ``tf.Example`` as feature name -> 1-D array (float32, int64 or bytes)."""
    features: dict[str, Tensor] = {}
    for name, feature in proto.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "float_list":
            features[name] = np.asarray(feature.float_list.value, dtype=np.float32)
        elif kind == "int64_list":
            features[name] = np.asarray(feature.int64_list.value, dtype=np.int64)
        else:
            values = list(feature.bytes_list.value) if kind == "bytes_list" else []
            array = np.empty(len(values), dtype=object)
            array[:] = values
            features[name] = array
    return features


def from_input(proto: Any) -> list[Example]:
    """The examples of a classify/regress ``Input``, each merged over the context."""
    kind = proto.WhichOneof("kind")
    if kind is None:
        raise InvalidInput("Input is empty.")
    if kind == "example_list":
        examples, context = proto.example_list.examples, {}
    else:
        examples = proto.example_list_with_context.examples
        context = from_example(proto.example_list_with_context.context)
    if not examples:
        raise InvalidInput("Input is empty.")
    return [{**context, **from_example(example)} for example in examples]
