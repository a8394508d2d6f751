"""What both APIs share: the ``{"instances": [...]}`` body, running a predict, and the
whole-request door of a Vertex AI prediction routine (``metadata.request_door``)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import codecs
from ...request import limits
from ...core.state import PredictState
from ...errors import InvalidInput, PredictorFailed
from ...models.served import LoadedVersion
from ...request.body import number_matrix, parse_json

Decoder = Callable[[Any], tuple[list[Any], dict[str, Any]]]
"""Splits a parsed body into the instances and the predictor's keyword arguments."""


def decode_predict(body: Any) -> tuple[list[Any], dict[str, Any]]:
    """AI Platform's body: the instances, and every other top-level key as a keyword."""
    require_object(body)
    if "instances" not in body:
        raise InvalidInput('Invalid JSON request: missing "instances" attribute')
    instances = body["instances"]
    if not isinstance(instances, list):
        raise InvalidInput('Invalid JSON request: "instances" must be a list')
    if not instances:
        raise InvalidInput('Invalid JSON request: "instances" must not be empty')
    return instances, {key: value for key, value in body.items() if key != "instances"}


def require_object(body: Any) -> None:
    """AI Platform's rule for every predict body: a JSON object."""
    if not isinstance(body, dict):
        raise InvalidInput("Invalid request: the body must be a JSON object")


def decode_vertex(body: Any) -> tuple[list[Any], dict[str, Any]]:
    """Vertex AI's ``PredictRequest``: ``instances`` and ``parameters`` only, refused as its
    JSON-to-proto parser refuses; ``parameters`` is the keyword ``parameters``."""
    if not isinstance(body, dict):
        raise InvalidInput("Invalid JSON payload received. Expected an object, got "
                           f"{codecs.json_kind(body)}.")
    for key in body:
        if key not in ("instances", "parameters"):
            raise InvalidInput(f'Invalid JSON payload received. Unknown name "{key[:100]}": '
                               "Cannot find field.")
    instances = body.get("instances")
    if instances is None or instances == []:
        raise InvalidInput("List of found errors:\t1.Field: instances; Message: Required "
                           "field is not set.\t")
    if not isinstance(instances, list):
        raise InvalidInput("Invalid value at 'instances': expected a list of instances, got "
                           f"{codecs.json_kind(instances)}.")
    return instances, {"parameters": body["parameters"]} if "parameters" in body else {}


def run_predict(state: PredictState, body: bytes, loaded: LoadedVersion,
                decode: Decoder = decode_predict) -> list[Any]:
    """Decode a predict body with *decode* and run it on *loaded* (held by the caller).

    A body that is only a matrix of numbers skips the JSON values (``number_matrix``) when
    the version takes a matrix (``loaded.takes_matrix``, decided at load); every other body is
    decoded, and checked, in full first.
    """
    bounds = state.settings.limits
    matrix = number_matrix(body, "instances", bounds) if loaded.takes_matrix else None
    if matrix is not None:
        limits.check_instances(bounds, len(matrix))
        limits.check_elements(bounds, matrix.shape, "instances")
        predictions = state.service.predict_matrix(loaded, matrix)
        if predictions is not None:
            return predictions
    instances, kwargs = decode(parse_json(body, bounds))
    limits.check_instances(bounds, len(instances))
    return state.service.predict_instances(loaded, instances, kwargs)


def run_answer(state: PredictState, body: bytes, loaded: LoadedVersion,
               check: Callable[[Any], object] | None = None) -> Any:
    """What a predict route answers for *body* on *loaded*: a whole-request model's own
    answer (:func:`run_request`, the parsed body checked by *check*), else
    ``{"predictions": [...]}`` from the instances (:func:`run_predict`)."""
    if loaded.metadata.request_door:
        return run_request(state, body, loaded, check)
    return {"predictions": run_predict(state, body, loaded)}


def run_request(state: PredictState, body: bytes, loaded: LoadedVersion,
                check: Callable[[Any], object] | None = None) -> Any:
    """Run a whole-request model (``metadata.request_door``, a Vertex AI routine) as Vertex
    AI's CPR model server runs it: the parsed body (checked by *check*, where the route
    restricts what it takes) goes to the model as it is, and what the model returns is the
    answer. ``PREDICT_MAX_INSTANCES`` bounds an ``instances`` list."""
    bounds = state.settings.limits
    document = parse_json(body, bounds)
    if check is not None:
        check(document)
    if isinstance(document, dict) and isinstance(document.get("instances"), list):
        limits.check_instances(bounds, len(document["instances"]))
    return state.service.predict_request(loaded, document)


def run_endpoint(state: PredictState, body: bytes, loaded: LoadedVersion) -> dict[str, Any]:
    """An endpoint's ``:predict``: the fields of Vertex AI's ``PredictResponse`` that the
    model fills, from the checked ``PredictRequest`` (the routine's whole answer through
    :func:`endpoint_fields` for a whole-request model)."""
    if loaded.metadata.request_door:
        return endpoint_fields(loaded.name, run_request(state, body, loaded, decode_vertex))
    return {"predictions": run_predict(state, body, loaded, decode_vertex)}


def endpoint_fields(name: str, answer: Any) -> dict[str, Any]:
    """The fields of Vertex AI's ``PredictResponse`` a whole-request model's *answer* fills:
    its ``predictions`` list, and its ``metadata`` where it has one (the response has no
    field for other keys). An answer without a ``predictions`` list is the model's failure
    (500), as Vertex AI's API refuses such an answer from a container."""
    predictions = answer.get("predictions") if isinstance(answer, dict) else None
    if not (isinstance(predictions, (list, tuple))
            or isinstance(predictions, np.ndarray) and predictions.ndim > 0):
        raise PredictorFailed(f'model {name!r} answered without a "predictions" list, which '
                              "an endpoint's :predict answer needs (:rawPredict answers as "
                              "the model does)")
    fields = {"predictions": predictions}
    if "metadata" in answer:
        fields["metadata"] = answer["metadata"]
    return fields


def print_answer(name: str, answer: Any) -> bytes:
    """*answer* as JSON text; an answer JSON cannot carry (a set, an object, a circular
    list) is model *name*'s failure (500), never a worker's."""
    try:
        return codecs.dumps(answer)
    except (TypeError, ValueError, RecursionError) as exc:
        raise PredictorFailed(f"model {name!r} answered a value that is not JSON: {exc}"
                              ) from exc
