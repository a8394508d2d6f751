"""The Open Inference Protocol's protobuf tensors <-> arrays, for the gRPC servicer
(:mod:`.servicer`).

A ``ModelInferRequest`` is decoded straight into the internal request: raw contents by
``np.frombuffer`` (:func:`.binary.binary_to_array`, the binary extension's own layout), typed
contents from their repeated fields (packed floats from the field's own bytes). The checks
are the REST decoder's (:mod:`.decoding`), in its order and words, so both transports refuse
a request alike; outputs go out as raw bytes, as Triton sends them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ... import codecs
from ...request.limits import check_shape
from ...errors import InvalidInput
from ...grpc.messages import v2
from ...types import InferenceRequest, Limits, Signature, Tensor
from .binary import array_to_binary, binary_to_array
from .decoding import (DecodedInfer, OutputOptions, check_count, check_datatype, decode_outputs,
                       fit_inputs, json_to_array, read_shape)

V2_CONTENTS: dict[str, str] = {
    "BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
    "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
    "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
    "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}
"""V2 datatype -> its typed ``InferTensorContents`` field (FP16 and BF16 have none)."""

FIELD_DTYPES: dict[str, np.dtype[Any]] = {
    "bool_contents": np.dtype(np.bool_), "int_contents": np.dtype(np.int32),
    "int64_contents": np.dtype(np.int64), "uint_contents": np.dtype(np.uint32),
    "uint64_contents": np.dtype(np.uint64), "fp32_contents": np.dtype("<f4"),
    "fp64_contents": np.dtype("<f8")}
"""Each numeric typed field's own element type."""

PACKED = ("fp32_contents", "fp64_contents")
"""Fields whose packed wire form is their values' little-endian bytes."""


def parameter_value(proto: Any) -> Any:
    """An ``InferParameter`` as a Python value (``None`` when unset)."""
    choice = proto.WhichOneof("parameter_choice")
    return None if choice is None else getattr(proto, choice)


def parameters(field: Any) -> dict[str, Any]:
    """A ``map<string, InferParameter>`` as a dict of Python values."""
    return {key: parameter_value(value) for key, value in field.items()}


# --- requests ---------------------------------------------------------------------------------

def decode_request(request: Any, version: str | None, signature: Signature,
                   limits: Limits | None = None) -> DecodedInfer:
    """A ``ModelInferRequest`` for the model whose default *signature* is given, checked as
    :func:`.decoding.decode_full` checks the same request over REST. The request id stays
    the message's (the servicer adopts it)."""
    raw = request.raw_input_contents
    tensors = request.inputs
    if raw and len(raw) != len(tensors):
        raise InvalidInput(f"raw_input_contents has {len(raw)} entries for "
                           f"{len(tensors)} inputs: give one per input, in order")
    for tensor in tensors:
        _check_contents(tensor, bool(raw))
    request_parameters = parameters(request.parameters) if request.parameters else {}
    if not tensors:
        raise InvalidInput("'inputs' must be a non-empty list of tensors")
    inputs = _decode_inputs(tensors, raw, limits, signature.tabular)
    names, options = _decode_outputs(request.outputs, request_parameters)
    decoded = InferenceRequest(model=request.model_name, version=version,
                               inputs=fit_inputs(inputs, signature), outputs=names,
                               parameters=request_parameters)
    return DecodedInfer(decoded, None, options)


def _decode_outputs(requested: Sequence[Any], request_parameters: dict[str, Any]
                    ) -> tuple[list[str] | None, OutputOptions]:
    """The requested outputs' names and options, as :func:`.decoding.decode_outputs` reads
    them from the REST form; the usual request (names alone, no parameters) without
    building that form."""
    if not requested:
        return decode_outputs(None, request_parameters)
    names = [output.name for output in requested]
    if request_parameters or len(set(names)) != len(names) or any(
            output.parameters for output in requested):
        return decode_outputs([{"name": output.name, "parameters": parameters(output.parameters)}
                               if output.parameters else {"name": output.name}
                               for output in requested], request_parameters)
    return names, OutputOptions()


def _check_contents(tensor: Any, raw: bool) -> None:
    """An input's values are in raw contents or in its datatype's typed field, not both."""
    if raw and not tensor.HasField("contents"):
        return  # the usual raw request: nothing to compare
    filled = [field.name for field, _ in tensor.contents.ListFields()]
    if raw:
        if filled:
            raise InvalidInput(f"input {tensor.name!r}: give raw_input_contents or "
                               "contents, not both")
        return
    field = V2_CONTENTS.get(tensor.datatype)
    if field is None and tensor.datatype in codecs.V2_TO_NUMPY:
        raise InvalidInput(f"input {tensor.name!r}: {tensor.datatype} has no typed "
                           "contents field; send it in raw_input_contents")
    if field is not None and filled and filled != [field]:
        raise InvalidInput(f"input {tensor.name!r}: {tensor.datatype} values go in "
                           f"contents.{field}, got {', '.join(filled)}")


def _decode_inputs(tensors: Sequence[Any], raw: Sequence[bytes], limits: Limits | None,
                   missing: bool) -> dict[str, Tensor]:
    """Each input as an array of its shape (:func:`.decoding.decode_inputs`'s checks, in
    its order); *missing*: the model takes a table (as the REST decoder's flag)."""
    inputs: dict[str, Tensor] = {}
    for index, tensor in enumerate(tensors):
        name = tensor.name
        if not name:
            raise InvalidInput(f"inputs[{index}]: missing 'name'")
        if name in inputs:
            raise InvalidInput(f"input {name!r} already exists in request")
        datatype = tensor.datatype
        check_datatype(datatype, name)
        shape = read_shape(list(tensor.shape), name)
        if limits is not None:
            check_shape(limits, shape, name)
        if raw:
            inputs[name] = binary_to_array(raw[index], datatype, shape, name)
        else:
            inputs[name] = _typed_array(tensor.contents, datatype, shape, name, missing)
    return inputs


def _typed_array(contents: Any, datatype: str, shape: tuple[int, ...], name: str,
                 missing: bool) -> Tensor:
    """Typed contents as an array of *shape*: numbers straight from their field (a value
    past a narrower datatype's range refused as over REST); BYTES, and an empty field, by
    the REST decoder's own steps."""
    field = V2_CONTENTS[datatype]
    values = getattr(contents, field)
    if datatype == "BYTES" or not values:
        return json_to_array(list(values), datatype, shape, name, missing)
    count = len(values)
    check_count(count, shape, name)
    own = FIELD_DTYPES[field]
    array = _packed(contents, own, count) if field in PACKED else None
    if array is None:
        array = np.fromiter(values, own, count)
    target = codecs.V2_TO_NUMPY[datatype]
    if array.dtype != target:
        if codecs.past_range(array, target):
            raise InvalidInput(f"input {name!r}: value out of range for {datatype}")
        array = array.astype(target)
    return array.reshape(shape)


def _packed(contents: Any, dtype: np.dtype[Any], count: int) -> Tensor | None:
    """The values of the one packed float field *contents* holds, read from its wire form:
    a one-byte tag, the length as a varint, then the values' little-endian bytes; ``None``
    if the bytes are not that."""
    data = contents.SerializeToString()
    offset = 1
    while offset < len(data) and data[offset] & 0x80:
        offset += 1
    offset += 1
    if len(data) - offset != count * dtype.itemsize:
        return None
    return np.frombuffer(data, dtype, count, offset).astype(dtype.newbyteorder("="))


# --- responses --------------------------------------------------------------------------------

def infer_response(model: str, version: str, request_id: str, outputs: Mapping[str, Tensor]
                   ) -> Any:
    """A ``ModelInferResponse`` with *outputs*, their values in ``raw_output_contents``
    whatever form the request's inputs came in, as Triton answers (and KServe, for numpy
    outputs): ``tritonclient.grpc``'s ``InferResult.as_numpy`` reads only those."""
    tensor = v2.ModelInferResponse.InferOutputTensor
    return v2.ModelInferResponse(
        model_name=model, model_version=version, id=request_id,
        outputs=[tensor(name=name, datatype=codecs.datatype_of(array), shape=array.shape)
                 for name, array in outputs.items()],
        raw_output_contents=[array_to_binary(array) for array in outputs.values()])
