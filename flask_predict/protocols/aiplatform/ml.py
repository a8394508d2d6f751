"""AI Platform Prediction's ``ml v1`` API: ``projects.predict``, ``projects.explain`` (see
:mod:`.explain`) and the model/version GETs.

``POST /v1/projects/<project>/models/<model>[/versions/<version>]:predict`` with
``{"instances": [...]}``; every other top-level key reaches the predictor as a keyword
argument. Answers ``{"predictions": [...]}``, or ``{"error": "<message>"}`` when the
prediction fails (400, 413, 500). Routing errors (a project not in
``PREDICT_AIPLATFORM_PROJECTS``, an unknown model or version, any other path or method under
``/v1/projects/``) answer Google's error envelope, as AI Platform does.

A Vertex AI routine (``metadata.request_door``) gets the whole body, any JSON object, and
what it returns is the answer, as it is.
"""

from __future__ import annotations

from typing import Any

from flask import request
from flask.typing import ResponseReturnValue

from ...core.state import PredictState
from ...errors import ModelNotFound, ModelNotReady
from ...models.served import LoadedVersion
from ...web.protocol_http import json_response, json_text, read_body, request_state
from .blueprint import bp
from .envelope import GoogleError, not_found, project_allowed
from .explain import run_explain
from .instances import print_answer, require_object, run_answer

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
FRAMEWORKS = {"sklearn": "SCIKIT_LEARN", "xgboost": "XGBOOST", "tensorflow": "TENSORFLOW"}
"""Our platform name -> AI Platform's ``Version.framework``; the enum has no value for the
others (LightGBM, CatBoost, ONNX, a custom predictor), which are ``FRAMEWORK_UNSPECIFIED``,
as AI Platform says of a custom prediction routine or container."""
UNSPECIFIED = "FRAMEWORK_UNSPECIFIED"


def holding_version(state: PredictState, project: str, model: str,
                    version: str | None) -> LoadedVersion:
    """Hold the version ``projects/<project>/models/<model>[/versions/<version>]`` names (a
    version name, else a number); routing errors in Google's envelope, worded as AI
    Platform words them."""
    if not project_allowed(state, project):
        raise not_found(f'The project resource: "{project}" was not found.', "name")
    service = state.service
    try:
        return service.acquire(model, version_name=version)  # the one look-up
    except ModelNotFound:
        if model not in service.names():  # which name was wrong, asked only on the miss
            raise not_found(f'The model resource: "{model}" was not found.', "name")
        raise not_found(f'The version resource: "{version}" of model "{model}" was not found.',
                        "name")
    except ModelNotReady as exc:
        raise GoogleError(exc)


@bp.post("/v1/projects/<project>/models/<model>:predict")
@bp.post("/v1/projects/<project>/models/<model>/versions/<version>:predict")
def predict(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    state = request_state()
    body = read_body(state)  # read before the version is held
    with holding_version(state, project, model, version) as loaded:
        answer = run_answer(state, body, loaded, require_object)
    return json_text(print_answer(loaded.name, answer))


@bp.post("/v1/projects/<project>/models/<model>:explain")
@bp.post("/v1/projects/<project>/models/<model>/versions/<version>:explain")
def explain(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    """``projects.explain``: the body ``:predict`` takes, ``{"explanations": [...]}``."""
    state = request_state()
    with holding_version(state, project, model, version) as loaded:
        answer = run_explain(state, read_body(state), loaded)
    return json_text(print_answer(loaded.name, answer))


@bp.get("/v1/projects/<project>/models/<model>")
@bp.get("/v1/projects/<project>/models/<model>/versions/<version>")
def describe(project: str, model: str, version: str | None = None) -> ResponseReturnValue:
    if ":" in model or ":" in (version or ""):  # a custom verb such as :predict, by GET
        return unknown_path(f"{project}/models/{model}" + (f"/versions/{version}" if version
                                                            else ""))
    state = request_state()
    resource = f"projects/{project}/models/{model}"
    with holding_version(state, project, model, version) as loaded:
        if version is None:
            return json_response({"name": resource,
                                  "defaultVersion": describe_version(resource, loaded, True)})
        is_default = state.service.model(model).default().version == loaded.version
        return json_response(describe_version(resource, loaded, is_default, version))


def describe_version(resource: str, loaded: LoadedVersion, is_default: bool,
                     name: str | None = None) -> dict[str, Any]:
    """The fields of AI Platform's Version resource a client reads."""
    version = {"name": f"{resource}/versions/{name or loaded.version}", "state": "READY",
               "isDefault": is_default}
    version["framework"] = FRAMEWORKS.get(loaded.metadata.platform, UNSPECIFIED)
    return version


@bp.route("/v1/projects/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str) -> ResponseReturnValue:
    raise GoogleError(ModelNotFound(
        f"Method not found: {request.method} /v1/projects/{rest[:200]}; expected POST "
        "/v1/projects/<project>/models/<model>[/versions/<version>]:predict or POST "
        "/v1/projects/<project>/locations/<location>/endpoints/<endpoint>:predict"))
