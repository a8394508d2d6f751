"""What both APIs share: the ``{"instances": [...]}`` body, version names, running a predict."""

from __future__ import annotations

from typing import Any, Callable

from ... import limits
from ...errors import InvalidInput
from ...served import LoadedVersion
from ...state import PredictState
from .._body import json_kind, number_matrix, parse_json

Decoder = Callable[[Any], tuple[list[Any], dict[str, Any]]]
"""Splits a parsed body into the instances and the predictor's keyword arguments."""


def decode_predict(body: Any) -> tuple[list[Any], dict[str, Any]]:
    """AI Platform's body: the instances, and every other top-level key as a keyword."""
    if not isinstance(body, dict):
        raise InvalidInput("Invalid request: the body must be a JSON object")
    if "instances" not in body:
        raise InvalidInput('Invalid JSON request: missing "instances" attribute')
    instances = body["instances"]
    if not isinstance(instances, list):
        raise InvalidInput('Invalid JSON request: "instances" must be a list')
    if not instances:
        raise InvalidInput('Invalid JSON request: "instances" must not be empty')
    return instances, {key: value for key, value in body.items() if key != "instances"}


def decode_vertex(body: Any) -> tuple[list[Any], dict[str, Any]]:
    """Vertex AI's ``PredictRequest``: ``instances`` and ``parameters`` only, refused as its
    JSON-to-proto parser refuses; ``parameters`` is the keyword ``parameters``."""
    if not isinstance(body, dict):
        raise InvalidInput("Invalid JSON payload received. Expected an object, got "
                           f"{json_kind(body)}.")
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
                           f"{json_kind(instances)}.")
    return instances, {"parameters": body["parameters"]} if "parameters" in body else {}


def run_predict(state: PredictState, body: bytes, loaded: LoadedVersion,
                decode: Decoder = decode_predict) -> list[Any]:
    """Decode a predict body with *decode* and run it on *loaded* (held by the caller).

    A body that is only a matrix of numbers skips the JSON values (``number_matrix``) when
    the model takes tensors; every other body is decoded, and checked, in full first.
    """
    bounds = state.settings.limits
    matrix = number_matrix(body, "instances", bounds)
    if matrix is not None:
        limits.check_instances(bounds, len(matrix))
        limits.check_elements(bounds, matrix.shape, "instances")
        predictions = state.service.predict_matrix(loaded, matrix)
        if predictions is not None:
            return predictions
    instances, kwargs = decode(parse_json(body, bounds))
    limits.check_instances(bounds, len(instances))
    return state.service.predict_instances(loaded, instances, kwargs)
