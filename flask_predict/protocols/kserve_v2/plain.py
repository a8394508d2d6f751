"""The usual small ``/infer`` body decoded in one pass.

Most requests have one input, of the model's own floating-point datatype, with flat
``data`` (a list, or for a larger body the float64 array ``codecs.loads_v2_infer`` read
it into), and no request or input ``parameters`` and no binary data. For such a
body :func:`decode_plain` answers what :func:`.decoding.decode_full` answers, checking only
what can differ there, and leaves every other body to it: ``None`` whenever the body is
not of that form or is wrong in any way, so every error still comes from the full decode,
in its order and words. A body whose text holds no ``true`` and no ``false`` holds no
booleans, so its numbers need no search for them (``codecs.has_booleans``). A one-row
request takes 0.95x the instructions it took through the full decode alone
(``benchmarks/README.md``, "Instructions per request").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import codecs
from ...request.limits import check_shape
from ...errors import InvalidInput, PredictError
from ...types import InferenceRequest, Limits, Signature, Tensor
from .decoding import DecodedInfer, decode_outputs, read_shape

DATATYPES = ("FP32", "FP64")
"""Input datatypes the plain path takes (when the model's input has the same)."""


def decode_plain(text: bytes, header: Any, binary: bytes, model: str, version: str | None,
                 signature: Signature, limits: Limits | None = None) -> DecodedInfer | None:
    """:func:`.decoding.decode_full`'s answer for the usual body (*header* parsed from its
    JSON *text*), else ``None``."""
    if binary or type(header) is not dict or "parameters" in header:
        return None
    raw_inputs, request_id = header.get("inputs"), header.get("id")
    if (type(raw_inputs) is not list or len(raw_inputs) != 1 or len(signature.inputs) != 1
            or (request_id is not None and type(request_id) is not str)):
        return None
    spec, raw = signature.inputs[0], raw_inputs[0]
    # exactly the four keys: each is looked up and checked below
    if type(raw) is not dict or len(raw) != 4 or spec.datatype not in DATATYPES:
        return None
    name, datatype, data = raw.get("name"), raw.get("datatype"), raw.get("data")
    if datatype != spec.datatype or type(name) is not str or not name:
        return None
    if type(data) is np.ndarray:  # numbers alone, read by the parser into one flat buffer
        if data.dtype != codecs.FLOAT64 or data.ndim != 1 or not data.size:
            return None
    elif (type(data) is not list or not data or type(data[0]) is list
          or b"true" in text or b"false" in text):  # (the search last: a pass of the body)
        return None
    try:  # the full decode's own checks: its shape rule, its limits, its outputs
        shape = read_shape(raw.get("shape"), name)
        if limits is not None:
            check_shape(limits, shape, name)
        names, options = decode_outputs(header.get("outputs"), {})
    except PredictError:
        return None  # the full decode raises it, in its order
    count = len(data)
    if math.prod(shape) != count:
        return None
    array = _numbers(data, datatype, name, count)
    if array is None:
        return None
    array = array.reshape(shape)
    try:
        codecs.check_shape(array, spec)
    except InvalidInput:
        return None
    request = InferenceRequest(model=model, version=version, inputs={spec.name: array},
                               outputs=names, parameters={})
    return DecodedInfer(request, request_id, options)


def _numbers(data: list[Any] | Tensor, datatype: str, name: str, count: int) -> Tensor | None:
    """``codecs.to_array(data, datatype, name)`` for flat *data* of *count* items (a list,
    or the parser's float64 array) in a body with no booleans; ``None`` where that refuses
    them, or where they are not flat."""
    if datatype == "FP64":  # numbers alone: to_array's asarray and astype, nothing to check
        try:
            numbers = np.asarray(data)
        except (ValueError, TypeError):  # a list among them
            return None
        if numbers.dtype.kind in "fiu" and numbers.ndim == 1:
            return numbers.astype(codecs.FLOAT64, copy=False)
    try:  # anything else (null, strings; float32's range check): to_array's own steps
        array = codecs.to_array(data, datatype, name)
    except InvalidInput:
        return None
    return array if array.size == count else None

