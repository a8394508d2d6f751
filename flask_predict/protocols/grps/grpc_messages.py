"""grps's protobuf ``GrpsMessage`` <-> the decoded request and its answers, for the gRPC
servicer (:mod:`.servicer`).

``gtensors`` are read from their ``flat_*`` fields straight into arrays, and answers are
built as messages, with the checks, messages and values of the ``/grps/v1`` JSON codec
(:mod:`.wire`); other payloads (``gmap``, and what is wrong with a message) take the JSON
codec's own path, through protobuf's JSON mapping.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from google.protobuf import json_format

from ... import codecs
from ...errors import InvalidInput
from ...grpc.messages import grps
from ...types import Tensor
from . import wire

FIELD_DTYPES: dict[str, np.dtype[Any]] = {
    "flat_uint8": np.dtype(np.uint32), "flat_int8": np.dtype(np.int32),
    "flat_int16": np.dtype(np.int32), "flat_int32": np.dtype(np.int32),
    "flat_int64": np.dtype(np.int64), "flat_float16": np.dtype(np.float32),
    "flat_float32": np.dtype(np.float32), "flat_float64": np.dtype(np.float64)}
"""Each numeric ``flat_*`` field's own element type."""


def to_request(message: Any) -> wire.GrpsRequest:
    """A ``GrpsMessage`` as the ``/grps/v1`` decoder reads its JSON form."""
    kind = message.WhichOneof("data_oneof")
    if kind == "bin_data" and message.bin_data:
        return wire.GrpsRequest(message.model, "bin_data", message.bin_data)
    if kind == "str_data" and message.str_data:
        return wire.GrpsRequest(message.model, "str_data", message.str_data)
    if kind == "gtensors" and message.gtensors.tensors:
        return wire.GrpsRequest(message.model, "gtensors", wire.check_names(
            [decode_tensor(tensor, index)
             for index, tensor in enumerate(message.gtensors.tensors)]))
    if kind == "ndarray":
        raise InvalidInput("ndarray is for HTTP JSON requests only: send gtensors")
    body = json_format.MessageToDict(message, preserving_proto_field_name=True)
    body.pop("status", None)
    body.pop("bin_data", None)  # empty: "No legal field", as over HTTP
    return wire.decode_message(body)


def decode_tensor(tensor: Any, index: int) -> tuple[str, Tensor]:
    """One ``GenericTensor`` as :func:`.wire.decode_tensor` reads its JSON form: only the
    ``flat_*`` field of its dtype, numbers past a narrower dtype's range refused."""
    name = tensor.name
    label = repr(name) if name else str(index)
    dtype = wire.dtype_name(tensor.dtype or None, label)  # DT_INVALID: as if left out
    datatype, field = wire.DTYPES[dtype][1:]
    shape = list(tensor.shape)
    values = getattr(tensor, field)
    wire.check_count(len(values), shape, dtype, label)
    where = name or f"tensor {index}"
    if datatype == "BYTES" or not values:
        return name, codecs.to_array(list(values), datatype, where).reshape(shape)
    array = np.fromiter(values, FIELD_DTYPES[field], len(values))
    target = codecs.V2_TO_NUMPY[datatype]
    if array.dtype != target:
        if codecs.past_range(array, target):
            raise InvalidInput(f"input {where!r}: value out of range for {datatype}")
        array = array.astype(target)
    return name, array.reshape(shape)


def answer(kind: str, value: Any) -> Any:
    """A successful answer holding one payload (model outputs as ``gtensors``)."""
    if kind == "outputs":
        return gtensors_message(value)
    if kind == "bin_data":
        return grps.GrpsMessage(status=wire.OK_STATUS, bin_data=value)
    if kind == "str_data":
        return grps.GrpsMessage(status=wire.OK_STATUS, str_data=value)
    return json_format.ParseDict(wire.message(kind, value), grps.GrpsMessage())


def failure(code: int, message: str) -> Any:
    """A ``FAILURE`` answer with the HTTP status *code* the same answer has over REST."""
    return grps.GrpsMessage(status={"code": code, "msg": message, "status": "FAILURE"})


def gtensors_message(outputs: Mapping[str, Tensor] | Sequence[tuple[str, Tensor]]) -> Any:
    """Model outputs as a ``gtensors`` answer: the tensors and values
    :func:`.wire.encode_gtensors` writes, in its order."""
    message = grps.GrpsMessage(status=wire.OK_STATUS)
    message.gtensors.SetInParent()  # set even when no output is
    tensors = message.gtensors.tensors
    for name, array in wire.ordered_outputs(outputs):
        dtype = wire.tensor_dtype(name, array)
        number, _, field = wire.DTYPES[dtype]
        tensor = tensors.add(name=name, dtype=number, shape=array.shape)
        if array.size:
            flat = wire.flat_values(array, dtype, name)
            getattr(tensor, field).extend(flat if isinstance(flat, list) else flat.tolist())
    return message
