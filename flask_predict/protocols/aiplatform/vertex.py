"""Vertex AI: the ``aiplatform v1`` endpoint API, and the routes of a custom container.

``POST /v1/projects/<p>/locations/<l>/endpoints/<e>:predict`` takes ``{"instances": [...],
"parameters": ...}`` and answers ``{"predictions": [...], "deployedModelId": ..., "model":
..., "modelDisplayName": ..., "modelVersionId": ...}``, every error in Google's envelope, as
Vertex AI's API does; ``:explain`` answers Google's ``ExplainResponse`` (:mod:`.explain`). ``:rawPredict`` takes the body a custom container's predict route takes
and answers what that route answers. ``PREDICT_VERTEX_ENDPOINTS`` maps endpoint ids to
models; without it the endpoint id is the model name.

A Vertex AI routine (``metadata.request_door``) is served as Vertex AI's CPR model server
serves it: the container's predict route and ``:rawPredict`` hand it the whole body, any
JSON, and answer what it returns; ``:predict`` hands it the checked ``PredictRequest`` and
takes ``predictions`` (and ``metadata``) from its answer into the ``PredictResponse``.

In a Vertex AI custom container, the routes in ``AIP_PREDICT_ROUTE`` and ``AIP_HEALTH_ROUTE``
serve the deployed model:
https://cloud.google.com/vertex-ai/docs/predictions/custom-container-requirements
"""

from __future__ import annotations


from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from . import settings
from ...core.state import EXTENSION_KEY, PredictState
from ...errors import ModelNotFound, ModelNotReady, PredictError
from ...models.served import LoadedVersion
from ...web.protocol_http import json_response, json_text, read_body, request_state
from .blueprint import bp
from .envelope import GoogleError, enveloped, not_found, project_allowed
from .explain import run_explain
from .instances import decode_vertex, print_answer, run_answer, run_endpoint

ENDPOINT = "/v1/projects/<project>/locations/<location>/endpoints/<endpoint>"


def holding_endpoint(state: PredictState, project: str, location: str,
                     endpoint: str) -> LoadedVersion:
    """Hold the version an endpoint serves; any failure is a :class:`GoogleError`."""
    name = f"projects/{project}/locations/{location}/endpoints/{endpoint}"
    endpoints = settings.of(state.settings).vertex_endpoints
    if not project_allowed(state, project) or (endpoints is not None and endpoint not in endpoints):
        raise not_found(f"Endpoint `{name}` not found.")
    model, version = (endpoint, None) if endpoints is None else endpoints[endpoint]
    try:
        return state.service.acquire(model, version_name=version)
    except ModelNotFound as exc:
        if endpoints is None:
            raise not_found(f"Endpoint `{name}` not found.")
        raise GoogleError(exc)
    except PredictError as exc:
        raise GoogleError(exc)


@bp.post(ENDPOINT + ":predict")
@enveloped
def endpoint_predict(project: str, location: str, endpoint: str) -> ResponseReturnValue:
    state = request_state()
    body = read_body(state)  # read before the version is held
    with holding_endpoint(state, project, location, endpoint) as loaded:
        answer = run_endpoint(state, body, loaded)
    answer.update(deployedModelId=loaded.name,
                  model=f"projects/{project}/locations/{location}/models/{loaded.name}",
                  modelDisplayName=loaded.name, modelVersionId=str(loaded.version))
    return json_text(print_answer(loaded.name, answer))


@bp.post(ENDPOINT + ":explain")
@enveloped
def endpoint_explain(project: str, location: str, endpoint: str) -> ResponseReturnValue:
    """``endpoints.explain`` (:mod:`.explain`): Google's ``ExplainResponse``."""
    state = request_state()
    with holding_endpoint(state, project, location, endpoint) as loaded:
        answer = run_explain(state, read_body(state), loaded, decode_vertex, vertex=True)
    return json_text(print_answer(loaded.name, answer))


@bp.post(ENDPOINT + ":rawPredict")
def endpoint_raw_predict(project: str, location: str, endpoint: str) -> ResponseReturnValue:
    """The body goes to the model as a custom container's predict route takes it."""
    state = request_state()
    body = read_body(state)
    with holding_endpoint(state, project, location, endpoint) as loaded:
        answer = run_answer(state, body, loaded)
    return json_text(print_answer(loaded.name, answer))


@bp.record
def add_container_routes(setup: BlueprintSetupState) -> None:
    """Vertex AI's routes, when its environment names them (``AIP_*_ROUTE``)."""
    section = settings.of(setup.app.extensions[EXTENSION_KEY].settings)
    if section.vertex_predict_route:
        setup.add_url_rule(section.vertex_predict_route, "vertex_predict", vertex_predict,
                           methods=["POST"])
    if section.vertex_health_route:
        setup.add_url_rule(section.vertex_health_route, "vertex_health", vertex_health,
                           methods=["GET"])


def vertex_model(state: PredictState) -> str:
    """The model a Vertex AI container serves: the configured one, or the only one."""
    model = settings.of(state.settings).vertex_model
    if model:
        return model
    names = state.service.names()
    if len(names) != 1:
        raise ModelNotFound(f"set PREDICT_VERTEX_MODEL: this server has models {names}")
    return names[0]


def vertex_predict() -> ResponseReturnValue:
    """``{"instances": [...], "parameters": {...}}`` -> ``{"predictions": [...]}`` (a
    Vertex AI routine: any body -> its answer)."""
    state = request_state()
    body = read_body(state)
    with state.service.use(vertex_model(state)) as loaded:
        answer = run_answer(state, body, loaded)
    return json_text(print_answer(loaded.name, answer))


def vertex_health() -> ResponseReturnValue:
    """200 ``{}`` once this worker serves the deployed model (Vertex AI polls it); 503 with
    the reason before that, and when no model is configured."""
    state = request_state()
    state.service.check_configured()
    if not state.service.ready:
        raise ModelNotReady("models are still loading")
    try:
        with state.service.use(vertex_model(state)):
            pass
    except PredictError as exc:
        raise ModelNotReady(exc.message) from exc
    return json_response({})
