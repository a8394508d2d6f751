"""Open Inference Protocol V2 bodies <-> the internal request and response.

Pure functions, no Flask: the JSON request (with the binary tensor data extension's raw
bytes after it, see :mod:`.binary`) becomes an :class:`~flask_predict.types.InferenceRequest`
(:func:`decode_infer`, the one entry), and an :class:`~flask_predict.types.InferenceResponse`
becomes a JSON header plus binary chunks.

Spec: https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md
"""

from __future__ import annotations

import base64
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import Any, Sequence

import numpy as np

from ... import codecs
from ...models.served import LoadedVersion, ServedModel
from ...types import InferenceResponse, Limits, Signature, Tensor, TensorSpec
from .binary import array_to_binary
from .classification import classify
from .decoding import DecodedInfer, OutputOptions, decode_full
from .plain import decode_plain

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


def tensor_metadata(spec: TensorSpec) -> dict[str, Any]:
    """One ``$metadata_tensor``; an unknown rank is shown as ``[-1]``."""
    shape = list(spec.shape) if spec.shape is not None else [-1]
    return {"name": spec.name, "datatype": spec.datatype, "shape": shape}


# --- requests -------------------------------------------------------------------------------

def decode_infer(header: Any, binary: bytes, model: str, version: str | None,
                 signature: Signature, limits: Limits | None = None,
                 text: bytes | None = None) -> DecodedInfer:
    """Decode an ``/infer`` body for the model whose default *signature* is given: the one
    entry, REST and gRPC. A JSON body's *text* (REST) lets the usual small body take the
    plain path (:mod:`.plain`, the same answer in one pass); any other body, and every
    error, is the full decode's (:func:`.decoding.decode_full`).

    Inputs are checked against their ``shape`` and ``datatype``, then fitted to the model:
    a single-input model takes its input under any name, and numbers are cast to the
    model's datatype when that loses no kind (integers to floats, not floats to integers).
    """
    if text is not None:
        decoded = decode_plain(text, header, binary, model, version, signature, limits)
        if decoded is not None:
            return decoded
    return decode_full(header, binary, model, version, signature, limits)


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
    values = [codecs.as_bytes(v) for v in flat.tolist()]
    try:
        return [v.decode("utf-8") for v in values], {}
    except UnicodeDecodeError:
        return ([base64.b64encode(v).decode("ascii") for v in values],
                {"content_type": "base64"})
