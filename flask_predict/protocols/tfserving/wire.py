"""TF Serving REST bodies: decode requests, encode responses, as ``json_tensor.cc`` does.

Pure functions over plain JSON values and numpy arrays; no Flask. Error texts carry TF
Serving's own wording, so clients that match on it keep working.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import numpy as np

from ... import codecs
from ...codecs import tfnumbers
from ...codecs.arrays import b64_bytes, is_b64
from ...codecs.json_tensor import json_type
from ...errors import InvalidInput, ModelNotFound
from ...models.served import LoadedVersion, ServedModel
from ...types import Classification, Example, Signature, Tensor, TensorSpec

V2_TO_DT: dict[str, str] = {
    "BOOL": "DT_BOOL", "UINT8": "DT_UINT8", "UINT16": "DT_UINT16", "UINT32": "DT_UINT32",
    "UINT64": "DT_UINT64", "INT8": "DT_INT8", "INT16": "DT_INT16", "INT32": "DT_INT32",
    "INT64": "DT_INT64", "FP16": "DT_HALF", "FP32": "DT_FLOAT", "FP64": "DT_DOUBLE",
    "BF16": "DT_BFLOAT16", "BYTES": "DT_STRING",
}
"""V2 datatype -> TensorFlow ``DataType`` name, for metadata of non-TensorFlow models."""

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
        return codecs.rows_to_tensors(body["instances"], signature), True
    return codecs.columns_to_tensors(body["inputs"], signature), False


def data_key(body: Mapping[str, Any]) -> str:
    """``instances`` (row format) or ``inputs`` (columnar): exactly one must be present."""
    if "instances" in body and "inputs" in body:
        raise InvalidInput(f"JSON Value: {short(body)} Not formatted correctly expecting "
                           "only one of 'inputs' or 'instances' keys to exist ")
    if "instances" not in body and "inputs" not in body:
        raise InvalidInput("Missing 'inputs' or 'instances' key")
    return "instances" if "instances" in body else "inputs"


def encode_predict(outputs: Mapping[str, Tensor], row_format: bool,
                   exact: bool = True) -> dict[str, Any] | tfnumbers.Raw:
    """``{"predictions": ...}`` for a row request, ``{"outputs": ...}`` for a columnar one.

    One output is written bare, several as objects keyed by output name. Numeric arrays stay
    numpy: :func:`codecs.dumps_tfserving` prints them as TF Serving does (*exact*), or as
    their shortest text; the rows of several outputs are printed here, either way, and the
    whole answer is then :class:`tfnumbers.Raw` text.
    """
    if not row_format:
        if len(outputs) == 1:
            ((name, array),) = outputs.items()
            return {"outputs": _value(array, name)}
        return {"outputs": {name: _value(array, name) for name, array in outputs.items()}}
    batch = None
    numbers = 0
    for name, array in outputs.items():
        if array.ndim == 0:
            raise InvalidInput(f"Tensor name: {name} has no shape information ")
        if batch is not None and array.shape[0] != batch:
            raise InvalidInput(f"Tensor name: {name} has inconsistent batch size: "
                               f"{array.shape[0]} expecting: {batch}")
        batch = array.shape[0]
        numbers += array.size
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        return {"predictions": _value(array, name)}
    rows = _rows_text(outputs, batch or 0, exact, numbers)
    return tfnumbers.Raw('{"predictions":' + rows + "}")


def _rows_text(outputs: Mapping[str, Tensor], batch: int, exact: bool, numbers: int) -> str:
    """``[{"name": <row of each output>, ...}, ...]``: for *exact* numbers, a grid of one
    line per row (:func:`tfnumbers.lines_text`) when the outputs hold enough of them (their
    elements: *numbers*); else a template with the names printed once and a ``%s`` for
    each number (or for each row of an output that is not numbers), filled by
    :func:`tfnumbers.fill_rows`, each number's text TF Serving's (*exact*) or its shortest."""
    if exact and numbers >= tfnumbers.GRID_FROM:
        text = _rows_grid(outputs, batch)
        if text is not None:
            return text
    print_texts = tfnumbers.element_texts if exact else tfnumbers.shortest_texts
    slots, columns = [], []
    for name, array in outputs.items():
        value = _value(array, name)
        rows = tfnumbers.row_texts(value) if exact and isinstance(value, np.ndarray) else None
        if rows is not None:  # a row's numbers in one text
            slots.append("[%s]")
            columns.append(rows)
        elif isinstance(value, np.ndarray):
            slots.append(tfnumbers.row_template(value.shape[1:]))
            columns.append(print_texts(value))
        else:
            slots.append("%s")
            columns.append([codecs.dumps(row).decode("utf-8") for row in value])
    row = _row_template(tuple(outputs), tuple(slots))
    if batch <= 1:  # the common online request: no interleaving
        items = [text for texts in columns for text in texts]
    else:  # row after row: each column's k-th text of a row lands every *stride* items
        stride = sum(len(texts) for texts in columns) // batch
        items = [""] * (stride * batch)
        offset = 0
        for texts in columns:
            width = len(texts) // batch
            for k in range(width):
                items[offset + k::stride] = texts[k::width]
            offset += width
    return tfnumbers.fill_rows(row, batch, items)


def _rows_grid(outputs: Mapping[str, Tensor], batch: int) -> str | None:
    """The rows laid out as :func:`tfnumbers.lines_text` lays them out; ``None`` when an output
    is not numbers of one or two dimensions."""
    parts: list[bytes | Tensor] = []
    for index, (name, array) in enumerate(outputs.items()):
        lines = tfnumbers.block(_value(array, name)) if array.dtype.kind in "biuf" else None
        if lines is None:
            return None
        parts += [(b"{" if index == 0 else b",") + codecs.dumps(name) + b":", lines]
    parts.append(b"}")
    return tfnumbers.lines_text(parts, batch).decode("utf-8")  # names may be any text


@functools.lru_cache(maxsize=256)
def _row_template(names: tuple[str, ...], slots: tuple[str, ...]) -> str:
    """``{"<name>": <slot>, ...}`` with each name printed once (a ``%`` in it doubled)."""
    return "{" + ",".join(codecs.dumps(name).decode("utf-8").replace("%", "%%") + ":" + slot
                          for name, slot in zip(names, slots)) + "}"


def _value(array: Tensor, name: str) -> Any:
    """A numeric array as itself; bytes as text or ``{"b64"}``."""
    if array.dtype.kind in "biu":  # the usual case first: labels, counts
        return array
    if array.dtype.kind in "OSU":
        return codecs.json_value(array, name)
    if array.dtype.kind != "f":
        raise InvalidInput(f"Failed to write JSON value for tensor type: {array.dtype}")
    if array.dtype.itemsize == 2:  # float16 (kind "f"); bfloat16 is kind "V"
        raise InvalidInput("Failed to write JSON value for tensor type: half")
    return array


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
        raise InvalidInput(f"Example must be JSON object but got JSON {json_type(obj)}")
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
            if not codecs.INT64_MIN <= item <= codecs.INT64_MAX:
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
        elif is_b64(item):
            kinds.add("bytes")
            items.append(_b64(item))
        else:
            raise InvalidInput(f"Feature: {name} has element with unexpected JSON type: "
                               f"{json_type(item)}")
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

def short(value: Any) -> str:
    """A JSON value as TF Serving quotes it in error messages (cut after 200 characters)."""
    return codecs.preview(value)


def _b64(value: dict[str, str]) -> bytes:
    data = b64_bytes(value["b64"])
    if data is None:
        raise InvalidInput("Unable to base64 decode")
    return data
