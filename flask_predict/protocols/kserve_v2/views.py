"""The V2 routes: health, server and model metadata, readiness and inference.

Every error answers ``{"error": "<message>"}``: 400 for a bad request, 404 for an unknown
model or version, 413 for a body over the limit, 503 for a model with no version loaded,
500 when the model itself fails. Health and readiness answer 200 or 400 with an empty body,
as the spec says ("a 4xx status code indicates false").

The repository extension (``/v2/repository/...``, load and unload guarded as admin routes)
and the statistics extension (``/v2/models/.../stats``) are the service's operations in
V2's words (:mod:`.repository_ext`, :mod:`.statistics`), as the gRPC servicer answers them.
"""

from __future__ import annotations

from flask import Blueprint, Response, request
from flask.typing import ResponseReturnValue

from . import (binary, body, lookup, raw_request, repository_ext, requested, settings, statistics,
               wire)
from ... import codecs
from ...request.record import current_request
from ...core.state import PredictState
from ...errors import InvalidInput, ModelNotFound
from ...web.protocol_http import (error_handler, json_error, read_body, request_state, wsgi_environ)

bp = Blueprint("predict_kserve_v2", __name__)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _json(payload: object, status: int = 200) -> Response:
    return Response(codecs.dumps_strict(payload), status=status, mimetype="application/json")


def _probe(ok: bool) -> Response:
    return Response(status=200 if ok else 400)


@bp.get("/v2")
@bp.get("/v2/")
def server_metadata() -> ResponseReturnValue:
    state = request_state()
    return _json(wire.server_metadata(state.settings.process.server_name, wire.server_version(),
                                      repository_ext.extensions(state.service)))


@bp.get("/v2/health/live")
def live() -> ResponseReturnValue:
    return _probe(True)


@bp.get("/v2/health/ready")
def ready() -> ResponseReturnValue:
    service = request_state().service
    service.check_configured()  # no model configured: 503 saying how to configure one
    return _probe(service.ready)


@bp.get("/v2/models/<model>/ready")
@bp.get("/v2/models/<model>/versions/<version>/ready")
def model_ready(model: str, version: str | None = None) -> ResponseReturnValue:
    return _probe(lookup.version_ready(request_state().service, model, version))


@bp.get("/v2/models/<model>")
@bp.get("/v2/models/<model>/versions/<version>")
def model_metadata(model: str, version: str | None = None) -> ResponseReturnValue:
    service = request_state().service
    with lookup.serving(service, model, version) as loaded:
        return _json(wire.model_metadata(service.model(model), loaded))


@bp.post("/v2/models/<model>/infer")
@bp.post("/v2/models/<model>/versions/<version>/infer")
def infer(model: str, version: str | None = None) -> ResponseReturnValue:
    record = current_request.get()
    state = request_state() if record is None else record.state
    header_length = wsgi_environ().get(binary.HEADER_LENGTH_KEY)
    head, raw = binary.split_body(read_body(state), header_length)
    bounds = state.settings.limits
    with lookup.serving(state.service, model, version) as loaded:
        signature = loaded.metadata.signature
        if header_length is not None and not head:  # Triton's raw binary request
            header, raw = raw_request.as_request(signature, model, raw)
            decoded = wire.decode_infer(header, raw, model, str(loaded.version), signature,
                                        bounds)
        else:
            decoded = wire.decode_infer(body.parse(head, bounds, settings.of(state.settings),
                                                   codecs.loads_v2_infer), raw, model,
                                        str(loaded.version), signature, bounds, text=head)
        if record is not None:
            record.adopt_id(decoded.request_id)  # the body's "id" names the request in the log
        ask, asked = requested.resolve(decoded.request, signature, model)
        result = requested.answering(state.service.predict(loaded, ask), asked)
        payload, chunks = wire.encode_infer(result, decoded.request_id, decoded.options,
                                            loaded.metadata.properties.get("classes"))
    text = codecs.dumps_strict(payload)
    if not chunks:
        return Response(text, mimetype="application/json")
    answer = Response(b"".join([text, *chunks]), mimetype="application/octet-stream")
    answer.headers[binary.HEADER_LENGTH] = str(len(text))
    return answer


@bp.get("/v2/models/stats")
@bp.get("/v2/models/<model>/stats")
@bp.get("/v2/models/<model>/versions/<version>/stats")
def model_statistics(model: str | None = None, version: str | None = None
                     ) -> ResponseReturnValue:
    return _json(statistics.model_stats(lookup.statistics(request_state().service, model,
                                                          version)))


@bp.post("/v2/repository/index")
def repository_index() -> ResponseReturnValue:
    state = request_state()
    ready = repository_ext.read_index_request(_optional_json(state))
    return _json(repository_ext.index(state.service, ready))


@bp.post("/v2/repository/models/<model>/load", defaults={"action": "load"})
@bp.post("/v2/repository/models/<model>/unload", defaults={"action": "unload"})
def repository_control(model: str, action: str) -> ResponseReturnValue:
    state = request_state()
    repository_ext.check_parameters(_parameters(state))
    service = state.service
    (service.load if action == "load" else service.unload)(model)
    return Response(status=200)


def _optional_json(state: PredictState) -> object:
    """The request's JSON body, ``None`` when it is empty."""
    text = read_body(state)
    return body.parse(text, state.settings.limits, settings.of(state.settings)) \
        if text.strip() else None


def _parameters(state: PredictState) -> dict[str, object]:
    """The ``parameters`` of a load or unload body (optional, as the body is)."""
    body = _optional_json(state)
    if body is None:
        return {}
    parameters = body.get("parameters", {}) if isinstance(body, dict) else None
    if not isinstance(parameters, dict):
        raise InvalidInput("the body must be a JSON object with an optional "
                           "\"parameters\" object")
    return parameters


@bp.route("/v2", endpoint="unknown_root", methods=ALL_METHODS)
@bp.route("/v2/", endpoint="unknown_root_slash", methods=ALL_METHODS)
@bp.route("/v2/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str = "") -> ResponseReturnValue:
    """Any other path or method under ``/v2``: 404 in the V2 error format, never HTML."""
    raise ModelNotFound(f"unknown V2 request: {request.method} /v2/{rest}".rstrip("/"))


bp.register_error_handler(Exception, error_handler(json_error))
