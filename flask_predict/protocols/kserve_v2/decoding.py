"""The full decode of an Open Inference Protocol V2 ``/infer`` body: any body, every check,
every error in its order and words. Pure functions, no Flask. :func:`.wire.decode_infer` is
the one entry; it takes the usual small body by :mod:`.plain` and any other by
:func:`decode_full`.

Spec: https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from ... import codecs
from ...request.limits import check_shape
from ...errors import InvalidInput
from ...types import InferenceRequest, Limits, Signature, Tensor, TensorSpec
from .binary import binary_to_array


@dataclass
class OutputOptions:
    """How the response encodes each output: binary or JSON."""

    binary_default: bool = False
    """The request's ``binary_data_output`` parameter."""
    binary: dict[str, bool] = field(default_factory=dict)
    """Per requested output ``binary_data``; it overrides the default."""
    classification: dict[str, int] = field(default_factory=dict)
    """Per requested output ``classification``: answer its top N classes."""

    def is_binary(self, name: str) -> bool:
        return self.binary.get(name, self.binary_default)


@dataclass
class DecodedInfer:
    """A decoded ``/infer`` body: the internal request and what the response must echo."""

    request: InferenceRequest
    request_id: str | None
    options: OutputOptions



def decode_full(header: Any, binary: bytes, model: str, version: str | None,
                signature: Signature, limits: Limits | None = None) -> DecodedInfer:
    """Decode any ``/infer`` body for the model whose default *signature* is given (every
    error is this decode's, in its order and words).

    Inputs are checked against their ``shape`` and ``datatype``, then fitted to the model:
    a single-input model takes its input under any name, and numbers are cast to the
    model's datatype when that loses no kind (integers to floats, not floats to integers).
    A table's columns (``Signature.tabular``) also come as ``[N, 1]`` (the pandas codec of
    MLServer and KServe), and ``null`` in their BYTES data is a missing value.
    """
    if not isinstance(header, dict):
        raise InvalidInput("the request body must be a JSON object")
    request_id = header.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise InvalidInput("'id' must be a string")
    parameters = _parameters(header, "request")
    raw_inputs = header.get("inputs")
    if raw_inputs is None:
        raise InvalidInput("missing 'inputs'")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise InvalidInput("'inputs' must be a non-empty list of tensors")
    inputs = decode_inputs(raw_inputs, binary, limits, signature.tabular)
    names, options = decode_outputs(header.get("outputs"), parameters)
    request = InferenceRequest(model=model, version=version,
                               inputs=fit_inputs(inputs, signature), outputs=names,
                               parameters=parameters)
    return DecodedInfer(request, request_id, options)


def decode_inputs(raw_inputs: list[Any], binary: bytes, limits: Limits | None = None,
                  missing: bool = False) -> dict[str, Tensor]:
    """Each ``$request_input`` as an array of its shape; binary inputs take their bytes
    from *binary* in order, and every byte of it must be used. A shape over *limits*
    (elements per tensor, instances in its first dimension) is refused (413) before any
    value is read. *missing*: ``null`` in BYTES data is a missing value (``None``)."""
    inputs: dict[str, Tensor] = {}
    offset = 0
    for index, raw in enumerate(raw_inputs):
        if not isinstance(raw, dict):
            raise InvalidInput(f"inputs[{index}] must be an object")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"inputs[{index}]: missing 'name'")
        if name in inputs:
            raise InvalidInput(f"input {name!r} already exists in request")
        datatype = raw.get("datatype")
        if not isinstance(datatype, str):
            raise InvalidInput(f"input {name!r}: missing 'datatype'")
        check_datatype(datatype, name)
        shape = read_shape(raw.get("shape"), name)
        if limits is not None:
            check_shape(limits, shape, name)
        size = _parameters(raw, "input", name).get("binary_data_size")
        if size is not None:
            if "data" in raw:
                raise InvalidInput(f"input {name!r}: give 'data' or 'binary_data_size', "
                                   "not both")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise InvalidInput(f"input {name!r}: 'binary_data_size' must be a "
                                   "non-negative integer")
            if offset + size > len(binary):
                raise InvalidInput(f"input {name!r}: binary_data_size {size} runs past the "
                                   f"end of the binary data ({len(binary) - offset} bytes "
                                   "left)")
            inputs[name] = binary_to_array(binary[offset:offset + size], datatype, shape, name)
            offset += size
        elif "data" in raw:
            inputs[name] = json_to_array(raw["data"], datatype, shape, name, missing)
        else:
            raise InvalidInput(f"input {name!r}: missing 'data'")
    if offset != len(binary):
        raise InvalidInput(f"{len(binary) - offset} bytes of binary data after the JSON "
                           "header belong to no input (check binary_data_size)")
    return inputs


def check_datatype(datatype: str, name: str) -> None:
    """An input's ``datatype`` is one of the spec's (400 naming them otherwise)."""
    if datatype not in codecs.V2_TO_NUMPY:
        raise InvalidInput(f"input {name!r}: unknown datatype {datatype!r}; expected "
                           "BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64, BF16 or "
                           "BYTES")


def json_to_array(data: Any, datatype: str, shape: tuple[int, ...], name: str,
                  missing: bool = False) -> Tensor:
    """JSON ``data``, nested or flat, as an array of *shape* (row-major). A flat list is
    counted before it is converted."""
    counted = None
    if isinstance(data, list) and data and not isinstance(data[0], list):
        counted = len(data)
        check_count(counted, shape, name)
    array = codecs.to_array(data, datatype, name, missing)
    if array.size != counted:  # nested data, or a flat list that did not stay flat
        check_count(array.size, shape, name)
    return array.reshape(shape)


def check_count(count: int, shape: tuple[int, ...], name: str) -> None:
    """*count* values fill *shape* exactly (400 saying how many it needs otherwise)."""
    needed = math.prod(shape)
    if count != needed:
        raise InvalidInput(f"input {name!r}: shape {list(shape)} needs {needed} values, "
                           f"got {count}")


def read_shape(value: Any, name: str) -> tuple[int, ...]:
    """An input's ``shape``: non-negative integers (400 for anything else)."""
    if not isinstance(value, list):
        raise InvalidInput(f"input {name!r}: 'shape' must be a list of integers")
    for dim in value:
        if type(dim) is not int and (isinstance(dim, bool) or not isinstance(dim, int)):
            raise InvalidInput(f"input {name!r}: 'shape' must be a list of integers, "
                               f"got {codecs.preview(value)}")
        if dim < 0:
            raise InvalidInput(f"input {name!r}: shape {codecs.preview(value)} has a negative "
                               "dimension; a request gives every dimension's actual size")
    return tuple(value)


def _parameters(obj: Mapping[str, Any], where: str, name: str | None = None
                ) -> dict[str, Any]:
    """*obj*'s ``parameters`` object (empty when absent); an error names *where* it was
    (``request``, or ``input`` or ``output`` and its *name*)."""
    parameters = obj.get("parameters")
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise InvalidInput(f"{_where(where, name)}: 'parameters' must be an object")
    return parameters


def _where(where: str, name: str | None) -> str:
    return where if name is None else f"{where} {name!r}"


def decode_outputs(raw: Any, parameters: Mapping[str, Any]) -> tuple[list[str] | None,
                                                                     OutputOptions]:
    """The requested output names (``None``: all) and their binary flags. An output asked
    for twice is answered once, as Triton keeps the requested outputs in a set (its later
    parameters win)."""
    options = OutputOptions(_flag(parameters, "binary_data_output", "request"))
    if raw is None:
        return None, options
    if not isinstance(raw, list):
        raise InvalidInput("'outputs' must be a list")
    names: list[str] = []
    for index, item in enumerate(raw):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise InvalidInput(f"outputs[{index}] must be an object with a 'name'")
        if name not in names:
            names.append(name)
        if "parameters" not in item:  # the usual request: a name alone
            continue
        item_parameters = _parameters(item, "output", name)
        if "binary_data" in item_parameters:
            options.binary[name] = _flag(item_parameters, "binary_data", "output", name)
        count = item_parameters.get("classification")
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InvalidInput(f"output {name!r}: 'classification' must be a positive "
                                   "integer")
            options.classification[name] = count
    return names, options


def _flag(parameters: Mapping[str, Any], key: str, where: str,
          name: str | None = None) -> bool:
    value = parameters.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"{_where(where, name)}: parameter {key!r} must be true or false")
    return value


def fit_inputs(inputs: dict[str, Tensor], signature: Signature) -> dict[str, Tensor]:
    """Fit decoded inputs to the model: rename a single input, cast numbers losslessly,
    take a table's ``[N, 1]`` column as its ``[N]`` values, and an ``[N]`` column as an
    input declared ``[N, 1]`` (skl2onnx declares a DataFrame's columns so, and the pandas
    codec of KServe's and MLServer's clients sends ``[N]``)."""
    single = len(signature.inputs) == 1 and len(inputs) == 1
    fitted = {}
    for name, array in inputs.items():
        spec = signature.inputs[0] if single else signature.input(name)
        if spec is None:
            fitted[name] = array
        else:  # errors name the input as the request does
            if array.ndim == 2 and array.shape[1] == 1 and signature.tabular:
                array = array.reshape(-1)
            elif array.ndim == 1 and _one_per_row(spec):
                array = array.reshape(-1, 1)
            fitted[spec.name] = _cast(array, spec, name)
    return fitted


def _one_per_row(spec: TensorSpec) -> bool:
    """Whether *spec* is declared ``[N, 1]`` (any N): one value per row."""
    return spec.shape is not None and len(spec.shape) == 2 and spec.shape[1] == 1


def _cast(array: Tensor, spec: TensorSpec, name: str) -> Tensor:
    target = codecs.V2_TO_NUMPY.get(spec.datatype)
    if target is None or target.kind == "O":
        return array  # BYTES in metadata: the model takes any type (custom predictors)
    same = array.dtype == target
    if not same and (array.dtype.kind == "O" or
                     not np.can_cast(array.dtype, target, "same_kind")):
        raise InvalidInput(f"input {name!r}: the model expects {spec.datatype}, "
                           f"got {codecs.datatype_of(array)}")
    try:
        codecs.check_shape(array, spec)
    except InvalidInput:  # the same message, naming the input as the request does
        codecs.check_shape(array, replace(spec, name=name))
    if same:
        return array
    if codecs.past_range(array, target):  # it would wrap, or become infinite
        raise InvalidInput(f"input {name!r}: {codecs.datatype_of(array)} value out of range "
                           f"for {spec.datatype}")
    return array.astype(target)
