"""Open Inference Protocol V2 bodies <-> the internal request and response.

Pure functions, no Flask: the JSON request (with the binary tensor data extension's raw
bytes after it, see :mod:`.binary`) becomes an :class:`~flask_predict.types.InferenceRequest`,
and an :class:`~flask_predict.types.InferenceResponse` becomes a JSON header plus binary
chunks.

Spec: https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import Any, Mapping, Sequence

import numpy as np

from ... import codecs
from ...errors import InvalidInput, ModelNotFound, PayloadTooLarge
from ...served import LoadedVersion, ServedModel
from ...types import (InferenceRequest, InferenceResponse, Limits, Signature, Tensor,
                      TensorSpec)
from .binary import array_to_binary, as_bytes, binary_to_array
from .classification import classify

PLATFORMS = {"tensorflow": "tensorflow_savedmodel"}
"""Our platform names -> the V2 spec's ``<project>_<format>`` names where it defines one."""

EXTENSIONS = ("binary_tensor_data", "classification")
"""Protocol extensions this server implements, as ``GET /v2`` lists them."""


def server_version() -> str:
    """The installed flask-predict version, as server metadata reports it."""
    try:
        return package_version("flask-predict")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


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


# --- metadata -------------------------------------------------------------------------------

def server_metadata(name: str, version: str, extensions: Sequence[str]) -> dict[str, Any]:
    """``GET /v2``: ``name``, ``version`` and ``extensions`` (all three required)."""
    return {"name": name, "version": version, "extensions": list(extensions)}


def model_metadata(served: ServedModel, loaded: LoadedVersion) -> dict[str, Any]:
    """``GET /v2/models/<m>[/versions/<v>]``: the default signature's tensors, ``-1`` for
    dimensions of any size."""
    meta = loaded.metadata
    signature = meta.signature
    return {"name": served.name,
            "versions": [str(v) for v in sorted(served.versions)],
            "platform": PLATFORMS.get(meta.platform, meta.platform),
            "inputs": [tensor_metadata(spec) for spec in signature.inputs],
            "outputs": [tensor_metadata(spec) for spec in signature.outputs]}


def version_ready(served: ServedModel, version: str | None) -> bool:
    """Model readiness: any version loaded, or that *version* (one never seen: 404)."""
    if not version:
        return served.ready
    number = int(version) if version.isdigit() else None
    if number is None or (number not in served.versions and number not in served.statuses):
        raise ModelNotFound(f"model {served.name!r} has no version {version}")
    return number in served.versions


def tensor_metadata(spec: TensorSpec) -> dict[str, Any]:
    """One ``$metadata_tensor``; an unknown rank is shown as ``[-1]``."""
    shape = list(spec.shape) if spec.shape is not None else [-1]
    return {"name": spec.name, "datatype": spec.datatype, "shape": shape}


# --- requests -------------------------------------------------------------------------------

def decode_infer(header: Any, binary: bytes, model: str, version: str | None,
                 signature: Signature, limits: Limits | None = None) -> DecodedInfer:
    """Decode an ``/infer`` body for the model whose default *signature* is given.

    Inputs are checked against their ``shape`` and ``datatype``, then fitted to the model:
    a single-input model takes its input under any name, and numbers are cast to the
    model's datatype when that loses no kind (integers to floats, not floats to integers).
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
    inputs = decode_inputs(raw_inputs, binary, limits)
    names, options = decode_outputs(header.get("outputs"), parameters)
    request = InferenceRequest(model=model, version=version,
                               inputs=fit_inputs(inputs, signature), outputs=names,
                               parameters=parameters)
    return DecodedInfer(request, request_id, options)


def decode_inputs(raw_inputs: list[Any], binary: bytes,
                  limits: Limits | None = None) -> dict[str, Tensor]:
    """Each ``$request_input`` as an array of its shape; binary inputs take their bytes
    from *binary* in order, and every byte of it must be used. A shape over *limits*
    (elements per tensor, instances in its first dimension) is refused (413) before any
    value is read."""
    inputs: dict[str, Tensor] = {}
    offset = 0
    for index, raw in enumerate(raw_inputs):
        if not isinstance(raw, dict):
            raise InvalidInput(f"inputs[{index}] must be an object")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"inputs[{index}]: missing 'name'")
        if name in inputs:
            raise InvalidInput(f"input {name!r} appears twice")
        datatype = raw.get("datatype")
        if not isinstance(datatype, str):
            raise InvalidInput(f"input {name!r}: missing 'datatype'")
        if datatype not in codecs.V2_TO_NUMPY:
            raise InvalidInput(f"input {name!r}: unknown datatype {datatype!r}; expected "
                               "BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64, BF16 or "
                               "BYTES")
        shape = read_shape(raw.get("shape"), name)
        if limits is not None:
            check_shape_limits(shape, name, limits)
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
            inputs[name] = json_to_array(raw["data"], datatype, shape, name)
        else:
            raise InvalidInput(f"input {name!r}: missing 'data'")
    if offset != len(binary):
        raise InvalidInput(f"{len(binary) - offset} bytes of binary data after the JSON "
                           "header belong to no input (check binary_data_size)")
    return inputs


def check_shape_limits(shape: tuple[int, ...], name: str, limits: Limits) -> None:
    """413 when an input's shape asks for more than the limits allow."""
    if shape and shape[0] > limits.max_instances:
        raise PayloadTooLarge(f"input {name!r}: shape {list(shape)} holds {shape[0]} "
                              f"instances; the limit is {limits.max_instances}")
    count = math.prod(shape)
    if count > limits.max_tensor_elements:
        raise PayloadTooLarge(f"input {name!r}: shape {list(shape)} has {count} elements; "
                              f"the limit is {limits.max_tensor_elements}")


def json_to_array(data: Any, datatype: str, shape: tuple[int, ...], name: str) -> Tensor:
    """JSON ``data``, nested or flat, as an array of *shape* (row-major). A flat list is
    counted before it is converted."""
    counted = None
    if isinstance(data, list) and data and not isinstance(data[0], list):
        counted = len(data)
        _check_count(counted, shape, name)
    array = codecs.to_array(data, datatype, name)
    if array.size != counted:  # nested data, or a flat list that did not stay flat
        _check_count(array.size, shape, name)
    return array.reshape(shape)


def _check_count(count: int, shape: tuple[int, ...], name: str) -> None:
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
    """The requested output names (``None``: all) and their binary flags."""
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
        if name in names:
            raise InvalidInput(f"output {name!r} is requested twice")
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
    """Fit decoded inputs to the model: rename a single input, cast numbers losslessly."""
    single = len(signature.inputs) == 1 and len(inputs) == 1
    fitted = {}
    for name, array in inputs.items():
        spec = signature.inputs[0] if single else signature.input(name)
        if spec is None:
            fitted[name] = array
        else:  # errors name the input as the request does
            fitted[spec.name] = _cast(array, spec, name)
    return fitted


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


# --- responses ------------------------------------------------------------------------------

def encode_infer(response: InferenceResponse, request_id: str | None,
                 options: OutputOptions, labels: Sequence[Any] | None = None
                 ) -> tuple[dict[str, Any], list[bytes]]:
    """The ``$inference_response`` object and the binary chunks that follow it, in output
    order. Binary outputs carry ``parameters.binary_data_size`` instead of ``data``.
    *labels* name the classes of outputs asked for as a classification."""
    outputs: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    for name, array in response.outputs.items():
        if name in options.classification:
            array = classify(array, options.classification[name], labels, name)
        datatype = codecs.datatype_of(array)
        tensor: dict[str, Any] = {"name": name, "datatype": datatype,
                                  "shape": list(array.shape)}
        if options.is_binary(name):
            chunk = array_to_binary(array)
            chunks.append(chunk)
            tensor["parameters"] = {"binary_data_size": len(chunk)}
        else:
            data, parameters = array_to_json(array)
            if parameters:
                tensor["parameters"] = parameters
            tensor["data"] = data
        outputs.append(tensor)
    body: dict[str, Any] = {"model_name": response.model,
                            "model_version": str(response.version)}
    if request_id is not None:
        body["id"] = request_id
    body["outputs"] = outputs
    return body, chunks


def array_to_json(array: Tensor) -> tuple[Any, dict[str, Any]]:
    """Flat JSON ``data`` for *array* and any output parameters it needs.

    Numbers stay a numpy array (the codec prints it; NaN and infinity become ``null``).
    BYTES are UTF-8 strings, or all base64 with ``content_type: base64`` (MLServer's
    convention) when some element is not text.
    """
    flat = array.reshape(-1)
    if flat.dtype.kind not in "OSU":
        if flat.dtype not in codecs.NUMPY_TO_V2 or flat.dtype.kind == "V":
            return flat.astype(np.float32), {}  # BF16 prints as float32
        return np.ascontiguousarray(flat), {}
    values = [as_bytes(v) for v in flat.tolist()]
    try:
        return [v.decode("utf-8") for v in values], {}
    except UnicodeDecodeError:
        return ([base64.b64encode(v).decode("ascii") for v in values],
                {"content_type": "base64"})
