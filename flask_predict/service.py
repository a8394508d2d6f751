"""The only callers of predictor methods: resolve the model, run it, wrap its failures."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import InvalidInput, PredictError, PredictorFailed
from .extension import PredictState
from .repository import LoadedVersion
from .types import Classification, Example, InferenceRequest, InferenceResponse, Tensor

logger = logging.getLogger(__name__)


@contextmanager
def calling(loaded: LoadedVersion, verb: str = "predict") -> Iterator[None]:
    """Run a predictor method: our own errors pass, anything else becomes
    :class:`PredictorFailed` (500, generic message) with the cause chained for the log."""
    try:
        yield
    except PredictError:
        raise
    except Exception as exc:
        raise PredictorFailed(f"model {loaded.name!r} failed to {verb}") from exc


def resolve(state: PredictState, model: str, version: str | int | None = None,
            label: str | None = None) -> LoadedVersion:
    """The loaded version that serves a request (unknown model or version: 404)."""
    return state.repository.get(model, version, label)


def predict(state: PredictState, request: InferenceRequest) -> InferenceResponse:
    """Run the tensor door of the model *request* names."""
    loaded = resolve(state, request.model, request.version, request.label)
    signature = loaded.predictor.signature(request.signature)
    if request.outputs is not None:
        unknown = [name for name in request.outputs if signature.output(name) is None]
        if unknown:
            raise InvalidInput(f"unknown output(s) {unknown}; the model's outputs are "
                               f"{[spec.name for spec in signature.outputs]}")
    with calling(loaded):
        outputs = loaded.predictor.predict_tensors(request.inputs, request.outputs,
                                                   request.signature)
    if not isinstance(outputs, Mapping) or not all(
            isinstance(v, np.ndarray) for v in outputs.values()):
        raise PredictorFailed(f"model {loaded.name!r} returned {type(outputs).__name__}, "
                              "not a mapping of arrays")
    return InferenceResponse(loaded.name, loaded.version, dict(outputs))


def predict_instances(loaded: LoadedVersion, instances: list[Any],
                      kwargs: Mapping[str, Any]) -> list[Any]:
    """Run the instances door of *loaded*: AI Platform's ``predict(instances, **kwargs)``."""
    with calling(loaded):
        predictions = loaded.predictor.predict(instances, **kwargs)
    if isinstance(predictions, np.ndarray):
        predictions = predictions.tolist()
    if not isinstance(predictions, (list, tuple)):
        raise PredictorFailed(f"model {loaded.name!r} returned {type(predictions).__name__}; "
                              "predict must return a list or a numpy array")
    return list(predictions)


def predict_stream(loaded: LoadedVersion, instances: list[Any],
                   kwargs: Mapping[str, Any]) -> Iterator[list[Any]]:
    """Run the instances door of *loaded* for a streaming request, one message at a time.

    A predictor streams by returning an iterator from ``predict`` (a generator, say): each
    item it yields is one message holding that one prediction. A list answer is a single
    message. ``predict`` is called at once; the items are produced as the caller iterates,
    and a failure while producing one raises :class:`PredictorFailed`.
    """
    with calling(loaded):
        result = loaded.predictor.predict(instances, **kwargs)
    if isinstance(result, np.ndarray):
        result = result.tolist()
    if isinstance(result, (list, tuple)):
        return iter([list(result)])
    if not isinstance(result, Iterator):
        raise PredictorFailed(f"model {loaded.name!r} returned {type(result).__name__}; "
                              "predict must return a list or an iterator")
    return _streamed_items(loaded, result)


def _streamed_items(loaded: LoadedVersion, items: Iterator[Any]) -> Iterator[list[Any]]:
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except PredictError:
            raise
        except Exception as exc:
            raise PredictorFailed(f"model {loaded.name!r} failed while streaming") from exc
        yield [item]


def classify(loaded: LoadedVersion, examples: Sequence[Example],
             signature: str | None = None) -> Classification:
    """Run :meth:`Predictor.classify` of *loaded* (TF Serving's ``:classify``)."""
    with calling(loaded, "classify"):
        result = loaded.predictor.classify(examples, signature)
    if not isinstance(result, Classification):
        raise PredictorFailed(f"model {loaded.name!r} returned {type(result).__name__}, "
                              "not a Classification")
    return result


def regress(loaded: LoadedVersion, examples: Sequence[Example],
            signature: str | None = None) -> Tensor:
    """Run :meth:`Predictor.regress` of *loaded* (TF Serving's ``:regress``)."""
    with calling(loaded, "regress"):
        values = loaded.predictor.regress(examples, signature)
    return np.asarray(values)


def predict_matrix(loaded: LoadedVersion, matrix: np.ndarray) -> list[Any] | None:
    """The instances door for instances parsed straight into a float64 matrix
    (``codecs.number_matrix``); ``None`` when *loaded* needs them as JSON values."""
    with calling(loaded):
        return loaded.predictor.predict_matrix(matrix)
