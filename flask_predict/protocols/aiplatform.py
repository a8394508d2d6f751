"""Google AI Platform Prediction ``projects.predict``.

https://cloud.google.com/ai-platform/prediction/docs/reference/rest/v1/projects/predict

``POST /v1/projects/<project>/models/<model>[/versions/<version>]:predict`` with
``{"instances": [...]}``; every other top-level key reaches the predictor as a keyword
argument. Answers ``{"predictions": [...]}``, or ``{"error": "<message>"}`` with 400
(bad request), 404 (unknown model or version), 413 (body too large) or 500 (the model failed).
The project is not checked. Query parameters such as ``?alt=json`` are ignored.

``GET /v1/projects/<project>/models/<model>[/versions/<version>]`` describes a model or
version (``projects.models.get`` / ``versions.get``, the fields a client checks). In a Vertex AI
custom container, the routes in ``AIP_PREDICT_ROUTE`` and ``AIP_HEALTH_ROUTE`` serve the
deployed model: https://cloud.google.com/vertex-ai/docs/predictions/custom-container-requirements
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable

from flask import Blueprint
from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from .. import codecs
from ..errors import InvalidInput, ModelNotFound, ModelNotReady
from ..served import LoadedVersion
from ..service import ModelService
from ..state import PredictState, get_state
from ._http import json_error, json_response, parse_json, read_body

bp = Blueprint("predict_aiplatform", __name__)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
FRAMEWORKS = {"sklearn": "SCIKIT_LEARN", "xgboost": "XGBOOST", "tensorflow": "TENSORFLOW"}
"""Our platform name -> AI Platform's ``Version.framework``."""


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


Use = Callable[[], AbstractContextManager[LoadedVersion]]
"""Resolves and holds the version a request names, once it is needed."""


@bp.post("/v1/projects/<project>/models/<model>:predict")
@bp.post("/v1/projects/<project>/models/<model>/versions/<version>:predict")
def predict(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    service = get_state().service
    predictions = run_predict(service, read_body(),
                              lambda: service.use(model, version_name=version))
    return json_response({"predictions": predictions})


def run_predict(service: ModelService, body: bytes, use: Use) -> list[Any]:
    """Decode a predict body and run it on the version *use* resolves (once).

    A body that is only a matrix of numbers skips the JSON values (``number_matrix``) when
    the model takes tensors; every other body is decoded, and checked, in full first.
    """
    matrix = codecs.number_matrix(body, "instances")
    if matrix is not None:
        with use() as loaded:
            predictions = service.predict_matrix(loaded, matrix)
            if predictions is not None:
                return predictions
            instances, kwargs = decode_predict(parse_json(body))
            return service.predict_instances(loaded, instances, kwargs)
    instances, kwargs = decode_predict(parse_json(body))
    with use() as loaded:
        return service.predict_instances(loaded, instances, kwargs)


@bp.get("/v1/projects/<project>/models/<model>")
@bp.get("/v1/projects/<project>/models/<model>/versions/<version>")
def describe(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    if ":" in model or ":" in (version or ""):  # a custom verb such as :predict, by GET
        return unknown_path(f"{project}/models/{model}" + (f"/versions/{version}" if version
                                                            else ""))
    service = get_state().service
    resource = f"projects/{project}/models/{model}"
    with service.use(model, version_name=version) as loaded:
        if version is None:
            return json_response({"name": resource,
                                  "defaultVersion": describe_version(resource, loaded, True)})
        is_default = service.model(model).default().version == loaded.version
        return json_response(describe_version(resource, loaded, is_default, version))


def describe_version(resource: str, loaded: LoadedVersion, is_default: bool,
                     name: str | None = None) -> dict[str, Any]:
    """The fields of AI Platform's Version resource a client reads."""
    version = {"name": f"{resource}/versions/{name or loaded.version}", "state": "READY",
               "isDefault": is_default}
    framework = FRAMEWORKS.get(loaded.metadata.platform)
    if framework:
        version["framework"] = framework
    return version


@bp.route("/v1/projects/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str) -> ResponseReturnValue:
    raise InvalidInput(f"unknown AI Platform request path: /v1/projects/{rest}; expected "
                       "POST /v1/projects/<project>/models/<model>[/versions/<version>]"
                       ":predict")


@bp.record
def add_vertex_routes(setup: BlueprintSetupState) -> None:
    """Vertex AI's routes, when its environment names them (``AIP_*_ROUTE``)."""
    settings = setup.app.extensions["predict"].settings
    if settings.vertex_predict_route:
        setup.add_url_rule(settings.vertex_predict_route, "vertex_predict", vertex_predict,
                           methods=["POST"])
    if settings.vertex_health_route:
        setup.add_url_rule(settings.vertex_health_route, "vertex_health", vertex_health,
                           methods=["GET"])


def vertex_model(state: PredictState) -> str:
    """The model a Vertex AI container serves: the configured one, or the only one."""
    if state.settings.vertex_model:
        return state.settings.vertex_model
    names = state.service.names()
    if len(names) != 1:
        raise ModelNotFound(f"set PREDICT_VERTEX_MODEL: this server has models {names}")
    return names[0]


def vertex_predict() -> ResponseReturnValue:
    """``{"instances": [...], "parameters": {...}}`` -> ``{"predictions": [...]}``."""
    state = get_state()
    service = state.service
    predictions = run_predict(service, read_body(),
                              lambda: service.use(vertex_model(state)))
    return json_response({"predictions": predictions})


def vertex_health() -> ResponseReturnValue:
    """200 once this worker has loaded every model (Vertex AI polls it), else 503."""
    if not get_state().service.ready:
        raise ModelNotReady("models are still loading")
    return json_response({})


@bp.errorhandler(Exception)
def handle_error(exc: Exception) -> ResponseReturnValue:
    return json_error(exc)
