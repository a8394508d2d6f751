"""The Open Inference Protocol's protobuf tensors <-> the REST decoder's form, for the gRPC
servicer (:mod:`.servicer`).

V2 inputs are handed to the REST decoder (:func:`.wire.decode_infer`) in its own form, raw
contents as its binary tensor data (the byte layout is the same), so both transports check
requests with the same rules and messages.
"""

from __future__ import annotations

from typing import Any, Sequence

from ... import codecs
from ...errors import InvalidInput
from ...types import Tensor
from .binary import array_to_binary

V2_CONTENTS: dict[str, str] = {
    "BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
    "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
    "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
    "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}
"""V2 datatype -> its typed ``InferTensorContents`` field (FP16 and BF16 have none)."""


def parameter_value(proto: Any) -> Any:
    """An ``InferParameter`` as a Python value (``None`` when unset)."""
    choice = proto.WhichOneof("parameter_choice")
    return None if choice is None else getattr(proto, choice)


def parameters(field: Any) -> dict[str, Any]:
    """A ``map<string, InferParameter>`` as a dict of Python values."""
    return {key: parameter_value(value) for key, value in field.items()}


def v2_request_inputs(request: Any) -> tuple[list[dict[str, Any]], bytes]:
    """The inputs of a ``ModelInferRequest`` as the REST decoder's ``$request_input``
    objects and the binary data after them: typed contents become ``data``, raw contents
    ``binary_data_size`` chunks."""
    raw = request.raw_input_contents
    if raw and len(raw) != len(request.inputs):
        raise InvalidInput(f"raw_input_contents has {len(raw)} entries for "
                           f"{len(request.inputs)} inputs: give one per input, in order")
    objects: list[dict[str, Any]] = []
    for index, tensor in enumerate(request.inputs):
        params = parameters(tensor.parameters)
        params.pop("binary_data_size", None)  # an HTTP parameter; raw contents set it here
        item: dict[str, Any] = {"name": tensor.name, "datatype": tensor.datatype,
                                "shape": list(tensor.shape), "parameters": params}
        filled = [f.name for f, _ in tensor.contents.ListFields()]
        if raw:
            if filled:
                raise InvalidInput(f"input {tensor.name!r}: give raw_input_contents or "
                                   "contents, not both")
            params["binary_data_size"] = len(raw[index])
        else:
            field = V2_CONTENTS.get(tensor.datatype)
            if field is None and tensor.datatype in codecs.V2_TO_NUMPY:
                raise InvalidInput(f"input {tensor.name!r}: {tensor.datatype} has no typed "
                                   "contents field; send it in raw_input_contents")
            if field is not None and filled and filled != [field]:
                raise InvalidInput(f"input {tensor.name!r}: {tensor.datatype} values go in "
                                   f"contents.{field}, got {', '.join(filled)}")
            item["data"] = list(getattr(tensor.contents, field)) if field else []
        objects.append(item)
    return objects, b"".join(raw)


def v2_requested_outputs(request: Any) -> list[dict[str, Any]] | None:
    """The requested outputs as the REST decoder's ``$request_output`` objects."""
    if not request.outputs:
        return None
    return [{"name": output.name, "parameters": parameters(output.parameters)}
            for output in request.outputs]


def needs_raw(outputs: Sequence[Tensor]) -> bool:
    """Whether some output has no typed contents field (FP16, BF16)."""
    return any(codecs.datatype_of(array) not in V2_CONTENTS for array in outputs)


def to_v2_output(array: Tensor, proto: Any, raw: list[bytes] | None) -> None:
    """Fill *proto* (an ``InferOutputTensor``) from *array*: its values go in typed
    contents, or appended to *raw* (``raw_output_contents``) when that is given."""
    datatype = codecs.datatype_of(array)
    proto.datatype = datatype
    proto.shape.extend(array.shape)
    if raw is not None:
        raw.append(array_to_binary(array))
        return
    field = getattr(proto.contents, V2_CONTENTS[datatype])
    flat = array.reshape(-1)
    if datatype == "BYTES":
        field.extend([codecs.as_bytes(value) for value in flat.tolist()])
    else:
        field.extend(flat.tolist())
