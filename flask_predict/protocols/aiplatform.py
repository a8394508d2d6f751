"""Google AI Platform Prediction ``projects.predict``.

https://cloud.google.com/ai-platform/prediction/docs/reference/rest/v1/projects/predict

``POST /v1/projects/<project>/models/<model>[/versions/<version>]:predict`` with
``{"instances": [...]}``; every other top-level key reaches the predictor as a keyword
argument. Answers ``{"predictions": [...]}``, or ``{"error": "<message>"}`` with 400
(bad request), 404 (unknown model or version), 413 (body too large) or 500 (the model failed).
The project is not checked. Query parameters such as ``?alt=json`` are ignored.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint
from flask.typing import ResponseReturnValue

from .. import service
from ..errors import InvalidInput
from ..extension import PredictState, get_state
from ..repository import LoadedVersion
from ._http import json_error, json_response, read_json

bp = Blueprint("predict_aiplatform", __name__)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def decode_predict(body: Any) -> tuple[list[Any], dict[str, Any]]:
    """Split a request body into the instances and the keyword arguments."""
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


def resolve_version(state: PredictState, model: str, version: str | None) -> LoadedVersion:
    """AI Platform names versions: a configured version name first, then a number."""
    if version is None:
        return service.resolve(state, model)
    if version in state.repository.model(model).spec.labels:
        return service.resolve(state, model, label=version)
    return service.resolve(state, model, version=version)


@bp.post("/v1/projects/<project>/models/<model>:predict")
@bp.post("/v1/projects/<project>/models/<model>/versions/<version>:predict")
def predict(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    instances, kwargs = decode_predict(read_json())
    loaded = resolve_version(get_state(), model, version)
    return json_response({"predictions": service.predict_instances(loaded, instances, kwargs)})


@bp.route("/v1/projects/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str) -> ResponseReturnValue:
    raise InvalidInput(f"unknown AI Platform request path: /v1/projects/{rest}; expected "
                       "POST /v1/projects/<project>/models/<model>[/versions/<version>]"
                       ":predict")


@bp.errorhandler(Exception)
def handle_error(exc: Exception) -> ResponseReturnValue:
    return json_error(exc)
