"""The MLflow scoring routes (``mlflow models serve``, SageMaker's container contract):
``GET /ping`` and ``/health``, ``GET /version``, ``POST /invocations``, and SageMaker's
``GET /execution-parameters`` and multi-model API (``/models``, :mod:`.multi_model`).

Errors answer MLflow's ``{"error_code": ..., "message": ...}`` (never a stack trace).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request
from flask.typing import ResponseReturnValue

from . import multi_model, settings, wire
from ...request import limits
from ...core.state import PredictState
from ...errors import (InvalidInput, ModelExists, ModelNotFound, ModelNotReady, ModelTooLarge,
                      PredictError)
from ...types import InferenceRequest
from ...request.body import parse_json
from ...web.protocol_http import (as_predict_error, error_handler, json_response, read_body,
                     request_state, wsgi_environ)
from .sagemaker import execution_parameters, server_version, target_names, wants_csv

bp = Blueprint("predict_mlflow", __name__)

TEXT = "text/plain"

TARGET_MODEL = "HTTP_X_AMZN_SAGEMAKER_TARGET_MODEL"
"""SageMaker's multi-model header, as the WSGI environ names it."""


@bp.get("/ping")
@bp.get("/health")
def ping() -> ResponseReturnValue:
    """200 with MLflow's body (a newline) once every model is loaded, else 503. MLflow
    labels that newline ``application/json``, which it is not: here it is plain text."""
    service = request_state().service
    service.check_configured()
    if not service.ready:
        raise ModelNotReady("the models are still loading")
    return Response("\n", status=200, mimetype=TEXT)


@bp.get("/version")
def version() -> ResponseReturnValue:
    """The version as text (MLflow's says ``application/json`` of a bare version)."""
    return Response(server_version(), status=200, mimetype=TEXT)


@bp.get("/execution-parameters")
def batch_parameters() -> ResponseReturnValue:
    state = request_state()
    return json_response(execution_parameters(settings.of(state.settings),
                                              state.settings.max_request_bytes))


@bp.post("/invocations")
def invocations() -> ResponseReturnValue:
    state = request_state()
    return scored(state, target(state, wsgi_environ().get(TARGET_MODEL)))


@bp.post("/models")
def models_add() -> ResponseReturnValue:
    """SageMaker's LoadModel: 200 once loaded here, 409 when it is, 507 past the cap."""
    state = multi_model_state()
    name, url = multi_model.read_load(read_json(state, read_body(state)))
    state.service.add_model(name, url)
    return json_response(multi_model.described(name, state.service.added_models()[name]))


@bp.get("/models")
def models_list() -> ResponseReturnValue:
    state = multi_model_state()
    return json_response(multi_model.page(state.service.added_models(),
                                          request.args.get("next_page_token")))


@bp.get("/models/<model>")
def model_describe(model: str) -> ResponseReturnValue:
    return json_response(multi_model.described(model, added(multi_model_state(), model)))


@bp.delete("/models/<model>")
def model_remove(model: str) -> ResponseReturnValue:
    multi_model_state().service.remove_model(model)
    return json_response({})


@bp.post("/models/<model>/invoke")
def model_invoke(model: str) -> ResponseReturnValue:
    state = multi_model_state()
    added(state, model)
    return scored(state, model)


def multi_model_state() -> PredictState:
    """The request's app state, when SageMaker's multi-model API is on (else 404)."""
    state = request_state()
    if not settings.of(state.settings).multi_model:
        raise ModelNotFound("SageMaker's multi-model API is off: set SAGEMAKER_MULTI_MODEL "
                            "(PREDICT_MLFLOW_MULTI_MODEL) to true")
    return state


def added(state: PredictState, name: str) -> str:
    """The folder of added model *name* (404 when it was not added)."""
    url = state.service.added_models().get(name)
    if url is None:
        raise ModelNotFound(f"model {name!r} is not loaded")
    return url


def scored(state: PredictState, name: str) -> ResponseReturnValue:
    """The request's body through model *name*, answered as JSON or CSV as it asks."""
    environ = wsgi_environ()
    mime = wire.media_type(environ.get("CONTENT_TYPE"))
    csv_answer = wants_csv(environ.get("HTTP_ACCEPT"))
    raw = read_body(state)
    if mime == wire.CSV:
        body = wire.decode_csv(raw)
    else:
        body = (wire.number_split(raw, state.settings.limits)
                or wire.decode_json(read_json(state, raw)))
    predicted = predict(state, name, body)
    if csv_answer:
        rows = predicted if isinstance(predicted, list) else [predicted]
        return Response(wire.csv_answer(rows), status=200, mimetype=wire.CSV)
    return json_response(wire.answer(predicted))


def read_json(state: PredictState, raw: bytes) -> Any:
    """The body parsed as JSON, refused in MLflow's words."""
    try:
        return parse_json(raw, state.settings.limits)
    except InvalidInput as exc:
        raise InvalidInput(f"Invalid input. Ensure that input is a valid JSON formatted "
                           f"string. Error: '{exc.message}'")


def predict(state: PredictState, name: str, body: wire.Body) -> Any:
    """*body* through model *name*'s default signature; the predictions as MLflow prints
    them."""
    bounds = state.settings.limits
    with state.service.use(name) as loaded:
        if loaded.metadata.instances_door:
            instances = wire.body_instances(body)
            limits.check_instances(bounds, len(instances))
            kwargs = {} if body.params is None else {"params": wire.params(body)}
            return state.service.predict_instances(loaded, instances, kwargs)
        signature = loaded.metadata.signature
        inputs = wire.body_tensors(body, signature)
        limits.check_tensors(bounds, inputs.items())
        result = state.service.predict(loaded, InferenceRequest(
            model=loaded.name, inputs=inputs, version=str(loaded.version),
            outputs=loaded.instance_outputs,
            parameters=body.params if isinstance(body.params, dict) else {}))
    return wire.predictions(result.outputs)


def target(state: PredictState, header: str | None) -> str:
    """The model a request is for: the one SageMaker's ``X-Amzn-SageMaker-Target-Model``
    names (with or without its ``.tar.gz``), else ``PREDICT_MLFLOW_MODEL``, else the only
    one served."""
    service = state.service
    service.check_configured()
    names = service.names()
    if header:
        candidates = target_names(header)
        for name in candidates:
            if name in names:
                return name
        for name in candidates:  # a model of the lazy tier's root, loaded on demand
            try:
                service.model(name)
            except ModelNotFound:
                continue
            return name
        raise ModelNotFound(f"no model {header!r} is served (X-Amzn-SageMaker-Target-Model); "
                            f"served: {sorted(names)}")
    chosen = settings.of(state.settings).model
    if chosen is not None:
        return chosen
    if len(names) == 1:
        return names[0]
    raise InvalidInput(f"{len(names)} models are served ({', '.join(sorted(names))}): name "
                       "one with the X-Amzn-SageMaker-Target-Model header, or set "
                       "PREDICT_MLFLOW_MODEL")


def mlflow_error(exc: Exception) -> Response:
    """MLflow's error body: ``error_code`` (its names for the status) and ``message``."""
    error = as_predict_error(exc)
    status = MULTI_MODEL_STATUS.get(type(error), error.http_status)
    return json_response({"error_code": error_code(status), "message": error.message}, status)


MULTI_MODEL_STATUS: dict[type[PredictError], int] = {ModelExists: 409, ModelTooLarge: 507}
"""SageMaker's multi-model statuses: a model added twice, one the memory cap cannot hold."""

ERROR_CODES = {400: "BAD_REQUEST", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
               404: "RESOURCE_DOES_NOT_EXIST", 409: "RESOURCE_ALREADY_EXISTS",
               429: "REQUEST_LIMIT_EXCEEDED", 501: "NOT_IMPLEMENTED",
               503: "TEMPORARILY_UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
               507: "RESOURCE_EXHAUSTED"}
"""HTTP status -> MLflow's ``error_code`` (``mlflow.exceptions.ERROR_CODE_TO_HTTP_STATUS``
read backwards); any other client error is ``BAD_REQUEST``, any other failure
``INTERNAL_ERROR``."""


def error_code(status: int) -> str:
    return ERROR_CODES.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL_ERROR")


bp.register_error_handler(Exception, error_handler(mlflow_error))
