"""TF Serving REST bodies: decode requests, encode responses, as ``json_tensor.cc`` does.

Pure functions over plain JSON values and numpy arrays; no Flask. Error texts carry TF
Serving's own wording, so clients that match on it keep working.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ... import codecs
from ...errors import InvalidInput, ModelNotFound
from ...served import LoadedVersion, ServedModel
from ...types import Classification, Example, Signature, Tensor, TensorSpec

V2_TO_DT: dict[str, str] = {
    "BOOL": "DT_BOOL", "UINT8": "DT_UINT8", "UINT16": "DT_UINT16", "UINT32": "DT_UINT32",
    "UINT64": "DT_UINT64", "INT8": "DT_INT8", "INT16": "DT_INT16", "INT32": "DT_INT32",
    "INT64": "DT_INT64", "FP16": "DT_HALF", "FP32": "DT_FLOAT", "FP64": "DT_DOUBLE",
    "BF16": "DT_BFLOAT16", "BYTES": "DT_STRING",
}
"""V2 datatype -> TensorFlow ``DataType`` name, for metadata of non-TensorFlow models."""

INT64_MAX = 2**63 - 1


# --- request envelope -----------------------------------------------------------------------

def check_body(body: Any) -> dict[str, Any]:
    """The top level must be an object with an optional string ``signature_name``."""
    if not isinstance(body, dict):
        raise InvalidInput(f"JSON Value: {short(body)} Is not object")
    name = body.get("signature_name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"JSON Value: {short(body)} not formatted correctly. "
                           "'signature_name' key must be a string value.")
    return body


def signature_name(body: Mapping[str, Any]) -> str | None:
    """The requested signature; missing or empty means the model's default."""
    return body.get("signature_name") or None


# --- predict --------------------------------------------------------------------------------

def decode_predict(body: Mapping[str, Any], signature: Signature,
                   name: str) -> tuple[dict[str, Tensor], bool]:
    """The input tensors of a predict body and whether it used the row format."""
    key = data_key(body)
    if not signature.inputs:
        raise InvalidInput(f"Failed to get input map for signature: {name}")
    if key == "instances":
        return decode_rows(body["instances"], signature), True
    return decode_columns(body["inputs"], signature), False


def data_key(body: Mapping[str, Any]) -> str:
    """``instances`` (row format) or ``inputs`` (columnar): exactly one must be present."""
    if "instances" in body and "inputs" in body:
        raise InvalidInput(f"JSON Value: {short(body)} Not formatted correctly expecting "
                           "only one of 'inputs' or 'instances' keys to exist ")
    if "instances" not in body and "inputs" not in body:
        raise InvalidInput("Missing 'inputs' or 'instances' key")
    return "instances" if "instances" in body else "inputs"


def decode_rows(instances: Any, signature: Signature) -> dict[str, Tensor]:
    """Row format: one value per instance, or one object naming every input."""
    if not isinstance(instances, list):
        raise InvalidInput(f"JSON Value: {short(instances)} Expecting 'instances' to be an "
                           "list/array")
    if not instances:
        raise InvalidInput(f"JSON Value: {short(instances)} No values in 'instances' array")
    specs = {spec.name: spec for spec in signature.inputs}
    if _is_named(instances[0]):
        columns: dict[str, list[Any]] = {alias: [] for alias in specs}
        for index, item in enumerate(instances):
            if not _is_named(item):
                raise InvalidInput(f"Expecting object but got list at item {index} of input "
                                   "list")
            if item.keys() != specs.keys():
                missing = [alias for alias in specs if alias not in item]
                detail = (f"JSON object: does not have named input: {missing[0]}" if missing
                          else f"JSON object: keys must be equal to: {','.join(sorted(specs))}")
                raise InvalidInput(f"Failed to process element: {index} of 'instances' list. "
                                   f"Error: INVALID_ARGUMENT: {detail}")
            for alias, value in item.items():
                columns[alias].append(value)
        return {alias: _array(values, specs[alias]) for alias, values in columns.items()}
    if len(specs) != 1:
        raise InvalidInput("instances is a plain list, but expecting list of objects as "
                           "multiple input tensors required as per tensorinfo_map")
    (spec,) = specs.values()
    try:
        return {spec.name: _array(instances, spec)}
    except InvalidInput:
        for index, item in enumerate(instances):  # TF Serving's message for a stray object
            if _is_named(item):
                raise InvalidInput(f"Expecting value/list but got object at item {index} of "
                                   "input list")
        raise


def matrix_inputs(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """A float64 matrix of row-format numbers as the single floating-point input of
    *signature*; ``None`` when the signature needs the JSON values (several inputs, or
    integer, boolean or string ones, whose rules :func:`decode_rows` applies)."""
    if len(signature.inputs) != 1 or signature.inputs[0].datatype not in ("FP16", "FP32",
                                                                          "FP64"):
        return None
    spec = signature.inputs[0]
    return {spec.name: matrix.astype(codecs.V2_TO_NUMPY[spec.datatype], copy=False)}


def decode_columns(inputs: Any, signature: Signature) -> dict[str, Tensor]:
    """Columnar format: the only input's value, or an object naming every input."""
    specs = {spec.name: spec for spec in signature.inputs}
    if _is_named(inputs):
        for alias in specs:
            if alias not in inputs:
                raise InvalidInput(f"Missing named input: {alias} in 'inputs' object.")
        return {alias: _array(inputs[alias], spec) for alias, spec in specs.items()}
    if len(specs) != 1:
        raise InvalidInput("inputs is a plain value/list, but expecting an object as multiple "
                           "input tensors required as per tensorinfo_map")
    (spec,) = specs.values()
    return {spec.name: _array(inputs, spec)}


def _array(values: Any, spec: TensorSpec) -> Tensor:
    datatype = spec.datatype
    if datatype not in codecs.V2_TO_NUMPY:
        raise InvalidInput(f"input {spec.name!r}: unsupported datatype {datatype!r}")
    return codecs.to_array(values, datatype, spec.name)


def _is_named(value: Any) -> bool:
    return isinstance(value, dict) and not codecs.is_b64(value)


def encode_predict(outputs: Mapping[str, Tensor], row_format: bool) -> dict[str, Any]:
    """``{"predictions": ...}`` for a row request, ``{"outputs": ...}`` for a columnar one.

    One output is written bare, several as objects keyed by output name. Numeric arrays stay
    numpy, so float32 values print at float32 precision.
    """
    if not row_format:
        if len(outputs) == 1:
            ((name, array),) = outputs.items()
            return {"outputs": _value(array, name)}
        return {"outputs": {name: _value(array, name) for name, array in outputs.items()}}
    batch = None
    for name, array in outputs.items():
        if array.ndim == 0:
            raise InvalidInput(f"Tensor name: {name} has no shape information ")
        if batch is not None and array.shape[0] != batch:
            raise InvalidInput(f"Tensor name: {name} has inconsistent batch size: "
                               f"{array.shape[0]} expecting: {batch}")
        batch = array.shape[0]
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        return {"predictions": _value(array, name)}
    names = list(outputs)
    columns = [_rows(array, name) for name, array in outputs.items()]
    return {"predictions": [dict(zip(names, row)) for row in zip(*columns)]}


def _value(array: Tensor, name: str) -> Any:
    """A numeric array as itself (0-d as a numpy scalar); bytes as text or ``{"b64"}``."""
    if array.dtype.kind in "OSU":
        return codecs.json_value(array, name)
    if array.dtype.kind not in "biuf":
        raise InvalidInput(f"Failed to write JSON value for tensor type: {array.dtype}")
    if array.dtype == np.float16:
        raise InvalidInput("Failed to write JSON value for tensor type: half")
    return array[()] if array.ndim == 0 else array


def _rows(array: Tensor, name: str) -> Sequence[Any]:
    """One entry per row; float32 rows stay numpy so they print at float32 precision."""
    if array.dtype.kind in "biuf" and array.dtype != np.float32:
        _value(array, name)  # refuses unprintable dtypes
        rows: list[Any] = array.tolist()
        return rows
    value = _value(array, name)
    return value if isinstance(value, list) else list(value)


# --- classify / regress ---------------------------------------------------------------------

def decode_examples(body: Mapping[str, Any]) -> list[Example]:
    """``examples`` (+ ``context``) as features; the kind of each feature follows its JSON
    tokens: string -> bytes, number with a fraction -> float, integer or boolean -> int64."""
    if "examples" not in body:
        raise InvalidInput(f"JSON Value: {short(body)} When method is classify, key "
                           "'examples' is expected and was not found")
    examples = body["examples"]
    if not isinstance(examples, list):
        raise InvalidInput(f"JSON Value: {short(examples)} Expecting 'examples' value to be "
                           "an list/array")
    if not examples:
        raise InvalidInput(f"JSON Value: {short(examples)} 'examples' value is an empty array")
    context = decode_features(body["context"]) if "context" in body else {}
    return [{**context, **decode_features(example)} for example in examples]


def decode_features(obj: Any) -> dict[str, Tensor]:
    """One JSON example object as feature name -> 1-D array (float32, int64 or bytes)."""
    if not isinstance(obj, dict):
        raise InvalidInput(f"Example must be JSON object but got JSON {_kind(obj)}")
    return {str(name): _feature(str(name), value) for name, value in obj.items()}


def _feature(name: str, value: Any) -> Tensor:
    values = value if isinstance(value, list) else [value]
    kinds = set()
    items: list[Any] = []
    for item in values:
        if isinstance(item, bool):
            kinds.add("int64")
            items.append(int(item))
        elif isinstance(item, int):
            if not -INT64_MAX - 1 <= item <= INT64_MAX:
                raise InvalidInput(f"Feature: {name} has uint64_t element. Only int64_t is "
                                   "supported.")
            kinds.add("int64")
            items.append(item)
        elif isinstance(item, float):
            kinds.add("float")
            items.append(item)
        elif isinstance(item, str):
            kinds.add("bytes")
            items.append(item.encode("utf-8"))
        elif codecs.is_b64(item):
            kinds.add("bytes")
            items.append(codecs.b64_decode(item, name))
        else:
            raise InvalidInput(f"Feature: {name} has element with unexpected JSON type: "
                               f"{_kind(item)}")
        if len(kinds) > 1:
            first = next(k for k in ("int64", "float", "bytes") if k in kinds)
            raise InvalidInput(f"Unexpected element type in feature: {name} expecting type: "
                               f"{first}")
    kind = kinds.pop() if kinds else "float"
    if kind == "bytes":
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array
    with np.errstate(over="ignore"):
        return np.asarray(items, dtype=np.float32 if kind == "float" else np.int64)


def encode_classify(result: Classification, count: int) -> dict[str, Any]:
    """``{"results": [[[label, score], ...], ...]}``: one list per example, one pair per class.
    Missing labels are ``""``, missing scores ``0.0`` (protobuf defaults)."""
    classes, scores = result.classes, result.scores
    if classes is None and scores is None:
        raise InvalidInput("Expected classification signature outputs to contain at least "
                           'one of "classes" or "scores".')
    present = scores if scores is not None else classes
    assert present is not None  # both None was refused above
    width = present.shape[-1]
    labels = (codecs.json_value(np.asarray(classes)) if classes is not None
              else [[""] * width for _ in range(count)])
    values = scores if scores is not None else np.zeros((count, width), np.float32)
    if len(labels) != count or len(values) != count:
        raise InvalidInput(f"Expected {count} classification results, got {len(values)}")
    return {"results": [[[label, score] for label, score in zip(row_labels, row_scores)]
                        for row_labels, row_scores in zip(labels, values)]}


def encode_regress(values: Tensor, count: int) -> dict[str, Any]:
    """``{"results": [v, ...]}``: one number per example."""
    values = np.asarray(values)
    if values.shape not in ((count,), (count, 1)):
        raise InvalidInput("Expected output Tensor shape to be either [batch_size] or "
                           f"[batch_size, 1] but got {list(values.shape)}")
    if values.dtype.kind not in "biuf":
        raise InvalidInput("Expected output Tensor of DT_FLOAT")
    return {"results": values.reshape(count)}


# --- status and metadata --------------------------------------------------------------------

def encode_status(served: ServedModel, version: int | None) -> dict[str, Any]:
    """``GetModelStatusResponse``: every tracked version newest first, or just *version*."""
    statuses = served.statuses
    if version is not None:
        if version not in statuses:
            raise_not_found(f"Could not find version {version} of model {served.name}")
        chosen = [statuses[version]]
    else:
        if not statuses:
            raise_not_found(f"Could not find any versions of model {served.name}")
        chosen = [statuses[v] for v in sorted(statuses, reverse=True)]
    return {"model_version_status": [
        {"version": str(status.version), "state": status.state,
         "status": {"error_code": "UNKNOWN" if status.error else "OK",
                    "error_message": status.error}}
        for status in chosen]}


def encode_metadata(loaded: LoadedVersion) -> dict[str, Any]:
    """``GetModelMetadataResponse`` with the ``signature_def`` field, as TF Serving prints it.

    TensorFlow models carry their SignatureDefs printed from the proto (property
    ``signature_def``); other models get them derived from their signatures.
    """
    meta = loaded.metadata
    signature_defs = meta.properties.get("signature_def")
    if signature_defs is None:
        signature_defs = {name: signature_def(sig) for name, sig in meta.signatures.items()}
    return {"model_spec": {"name": loaded.name, "signature_name": "",
                           "version": str(loaded.version)},
            "metadata": {"signature_def": {"signature_def": signature_defs}}}


def signature_def(signature: Signature) -> dict[str, Any]:
    """A SignatureDef in proto3 JSON (field names preserved, defaults printed)."""
    return {"inputs": {spec.name: tensor_info(spec) for spec in signature.inputs},
            "outputs": {spec.name: tensor_info(spec) for spec in signature.outputs},
            "method_name": signature.method_name, "defaults": {}}


def tensor_info(spec: TensorSpec) -> dict[str, Any]:
    shape: dict[str, Any] = {"dim": [], "unknown_rank": True}
    if spec.shape is not None:
        shape = {"dim": [{"size": str(size), "name": ""} for size in spec.shape],
                 "unknown_rank": False}
    return {"dtype": V2_TO_DT.get(spec.datatype, "DT_INVALID"), "tensor_shape": shape,
            "name": spec.tensor_name}


def raise_not_found(message: str) -> None:
    raise ModelNotFound(message)


# --- helpers --------------------------------------------------------------------------------

def short(value: Any, limit: int = 200) -> str:
    """A JSON value as TF Serving quotes it in error messages, cut at *limit* characters."""
    try:
        text = codecs.dumps(value).decode("utf-8", "replace")
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "Null"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, str):
        return "String"
    if isinstance(value, bool):
        return "Bool"
    return "Number"
