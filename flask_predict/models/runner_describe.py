"""What crosses the runner's socket besides arrays, as JSON: a version's metadata, the
examples of ``classify`` and ``regress``, and errors (a :class:`PredictError` keeps its kind
and message, so the worker's protocol answers exactly what the in-worker predictor's raise
would have given)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import errors
from ..errors import PredictError
from ..types import Example, ModelMetadata, Signature, TensorSpec


def metadata_to_json(meta: ModelMetadata) -> dict[str, Any]:
    return {"platform": meta.platform, "default_signature": meta.default_signature,
            "properties": dict(meta.properties), "instances_door": meta.instances_door,
            "request_door": meta.request_door,
            "signatures": {name: _signature_to_json(sig)
                           for name, sig in meta.signatures.items()}}


def metadata_from_json(data: Mapping[str, Any]) -> ModelMetadata:
    return ModelMetadata(
        platform=data["platform"], default_signature=data["default_signature"],
        properties=data["properties"], instances_door=data["instances_door"],
        request_door=data["request_door"],
        signatures={name: _signature_from_json(sig) for name, sig in data["signatures"].items()})


def _signature_to_json(sig: Signature) -> dict[str, Any]:
    return {"inputs": [_spec_to_json(s) for s in sig.inputs],
            "outputs": [_spec_to_json(s) for s in sig.outputs],
            "method_name": sig.method_name, "tabular": sig.tabular}


def _signature_from_json(data: Mapping[str, Any]) -> Signature:
    return Signature(inputs=tuple(_spec_from_json(s) for s in data["inputs"]),
                     outputs=tuple(_spec_from_json(s) for s in data["outputs"]),
                     method_name=data["method_name"], tabular=data["tabular"])


def _spec_to_json(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype,
            "shape": None if spec.shape is None else list(spec.shape),
            "tensor_name": spec.tensor_name}


def _spec_from_json(data: Mapping[str, Any]) -> TensorSpec:
    shape = data["shape"]
    return TensorSpec(data["name"], data["datatype"], None if shape is None else tuple(shape),
                      data["tensor_name"])


def examples_to_arrays(examples: Sequence[Example]) -> dict[str, np.ndarray]:
    """tf.Examples as named arrays: feature *f* of example *i* is ``"<i>/<f>"``."""
    return {f"{i}/{feature}": value for i, example in enumerate(examples)
            for feature, value in example.items()}


def examples_from_arrays(count: int, arrays: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    examples: list[dict[str, Any]] = [{} for _ in range(count)]
    for key, value in arrays.items():
        index, _, feature = key.partition("/")
        examples[int(index)][feature] = value
    return examples


def error_to_json(exc: BaseException) -> dict[str, Any]:
    """*exc* as the runner sends it: a :class:`PredictError`'s class and message; anything
    else only as a failure (its one line is for the runner's log and the worker's)."""
    if isinstance(exc, PredictError):
        return {"kind": type(exc).__name__, "code": exc.code.value, "message": exc.message}
    return {"kind": "", "code": "", "message": f"{type(exc).__name__}: {exc}".splitlines()[0]}


class RunnerCallFailed(RuntimeError):
    """The predictor in the runner raised something that is not a :class:`PredictError`: the
    worker's service answers it as any predictor failure (500, generic message)."""


def error_from_json(data: Mapping[str, Any]) -> Exception:
    """The exception the worker raises for an error the runner sent."""
    kind = getattr(errors, str(data.get("kind") or ""), None)
    if isinstance(kind, type) and issubclass(kind, PredictError):
        error = kind.__new__(kind)  # its message as sent, whatever its own __init__ adds
        PredictError.__init__(error, str(data["message"]))
        if isinstance(error, errors.DeadlineExceeded):
            error.stopped_at = ""
        return error
    if data.get("code"):
        return _by_code(str(data["code"]), str(data["message"]))
    return RunnerCallFailed(str(data["message"]))


def _by_code(code: str, message: str) -> Exception:
    """A :class:`PredictError` subclass of our own not in :mod:`flask_predict.errors` (a
    plugin's): the first of ours with the same code."""
    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, PredictError) \
                and value.code.value == code:
            return value(message)
    return RunnerCallFailed(message)
