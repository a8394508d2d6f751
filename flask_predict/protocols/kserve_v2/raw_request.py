"""Triton's raw binary request (binary tensor data extension): the header
``Inference-Header-Content-Length: 0`` says there is no JSON at all, and the whole body is
the bytes of the model's one input. No Flask here.

As Triton deduces it (``InferenceRequest::Normalize`` in triton-inference-server/core): the
model must have exactly one input; its datatype and shape come from the model's metadata,
and the one variable-size dimension (``-1``) from the byte count. A BYTES input must hold
one element (its shape ``[1]``, any ``-1`` taken as 1), and the body is that element (the
4-byte length Triton's layout wants is put in front). Every output comes back binary, as
``"binary_data_output": true`` asks. Triton's words where the input cannot be deduced.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ... import codecs
from ...errors import InvalidInput
from ...types import Signature, TensorSpec


def as_request(signature: Signature, model: str, body: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON header a raw *body* stands for, and the binary data that follows it."""
    if len(signature.inputs) != 1:
        raise InvalidInput(f"Raw request must only have 1 input (found 1) to be deduced but "
                           f"got {len(signature.inputs)} inputs in '{model}' model "
                           "configuration")
    if not body:
        raise InvalidInput("a raw binary request (Inference-Header-Content-Length: 0) "
                           "needs the input's bytes as its body; the body is empty")
    spec = signature.inputs[0]
    if spec.datatype == "BYTES":
        shape = _one_element(spec)
        body = struct.pack("<I", len(body)) + body
    else:
        shape = _deduced(spec, len(body))
    header = {"inputs": [{"name": spec.name, "datatype": spec.datatype, "shape": shape,
                          "parameters": {"binary_data_size": len(body)}}],
              "parameters": {"binary_data_output": True}}
    return header, body


def _declared(spec: TensorSpec) -> list[int]:
    if spec.shape is None:
        raise InvalidInput(f"The shape of the raw input '{spec.name}' can not be deduced "
                           "because the model does not declare it")
    return list(spec.shape)


def _one_element(spec: TensorSpec) -> list[int]:
    shape = [1 if size == -1 else size for size in _declared(spec)]
    if math.prod(shape) != 1:
        raise InvalidInput(f"For BYTE datatype raw input '{spec.name}', the model must have "
                           "input shape [1]")
    return shape


def _deduced(spec: TensorSpec, size: int) -> list[int]:
    """The declared shape, its one ``-1`` filled from *size* bytes (without one, a size
    that does not fit is refused as any binary input's is)."""
    shape = _declared(spec)
    variable = [axis for axis, dim in enumerate(shape) if dim == -1]
    if len(variable) > 1:
        raise InvalidInput(f"The shape of the raw input '{spec.name}' can not be deduced "
                           "because there are more than one variable-sized dimension")
    dtype = codecs.V2_TO_NUMPY.get(spec.datatype)
    if variable and dtype is not None:
        known = math.prod(dim for dim in shape if dim != -1) * dtype.itemsize
        if not known or size % known:
            raise InvalidInput(f"The shape of the raw input '{spec.name}' can not be "
                               f"deduced: {size} bytes are no whole number of {known}-byte "
                               f"steps of {spec.datatype} {list(spec.shape or ())}")
        shape[variable[0]] = size // known
    return shape
