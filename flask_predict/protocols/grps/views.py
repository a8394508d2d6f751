"""The grps routes under ``/grps/v1``: health, predict, metadata, monitor.

https://github.com/NetEase-Media/grps/blob/master/docs/2_Interface.md

Every answer is a ``GrpsMessage`` whose ``status`` envelope carries the HTTP status as its
``code``; errors are ``{"status": {"code", "msg", "status": "FAILURE"}}``.
"""

from __future__ import annotations

import html
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import parse_qsl

from flask import Blueprint, Response, request, stream_with_context
from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from . import dispatch, settings, wire
from ... import codecs
from ...core.state import EXTENSION_KEY, PredictState
from ...errors import (ConfigError, InvalidInput, MethodNotAllowedError, ModelNotFound,
                       PredictorFailed, Unimplemented)
from ...models.served import LoadedVersion
from ...models.shared_state import StateDir
from ...observability.metrics import INF, LATENCY_BUCKETS
from ...observability.traffic import Samples, Snapshot, Totals
from ...types import Limits
from ...request.body import number_matrix, parse_json
from ...web.protocol_http import (as_predict_error, error_handler, json_response, read_body,
                                  read_json, request_state, wsgi_environ)

bp = Blueprint("predict_grps", __name__)

ROOT = "/grps/v1"
BINARY_MIMETYPE = "application/octet-stream"
EITHER = ["GET", "POST"]
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
CDF_PERCENTS = (*range(10, 100, 10), *range(91, 100), 99.9, 99.99)


@bp.record_once
def _set_up(setup: BlueprintSetupState) -> None:
    """Open the server's shared state and check the default model, once per app at boot."""
    state: PredictState = setup.app.extensions[EXTENSION_KEY]
    section = settings.of(state.settings)
    default = section.default_model
    if default is not None and dispatch.split_model_id(
            default, [s.name for s in state.settings.models]) is None:
        raise ConfigError(f"PREDICT_GRPS_DEFAULT_MODEL: Model {default} not found.")
    state.service.open_online_switch(StateDir(state.settings.process.state_dir), section.start_online)
    state.extras[dispatch.STATE_KEY] = dispatch.GrpsState(default_model=default)


def grps_state() -> dispatch.GrpsState:
    return dispatch.grps_state(request_state())


# --- health -----------------------------------------------------------------------------------

def ok() -> Response:
    return json_response({"status": wire.OK_STATUS})


@bp.route(f"{ROOT}/health/online", methods=EITHER)
def online() -> ResponseReturnValue:
    request_state().service.set_online(True)
    return ok()


@bp.route(f"{ROOT}/health/offline", methods=EITHER)
def offline() -> ResponseReturnValue:
    request_state().service.set_online(False)
    return ok()


@bp.route(f"{ROOT}/health/live", methods=EITHER)
def live() -> ResponseReturnValue:
    return ok()


@bp.route(f"{ROOT}/health/ready", methods=EITHER)
def ready() -> ResponseReturnValue:
    reason = dispatch.unready_reason(request_state())
    if reason is None:
        return ok()
    return json_response(wire.error_body(503, reason), 503)


# --- predict ----------------------------------------------------------------------------------

@bp.post(f"{ROOT}/infer/predict")
def predict() -> ResponseReturnValue:
    binary = _is_binary_body()
    query = _query()
    streaming = query.get("streaming", "").lower() == "true"
    return_ndarray = query.get("return-ndarray", "").lower() == "true"
    if streaming and return_ndarray:
        raise InvalidInput("Streaming and ret ndarray are not supported at the same time.")
    state = request_state()
    body = read_body(state)
    if not body:
        raise InvalidInput("The http body is empty.")
    if binary:
        message = wire.GrpsRequest("", "bin_data", body)
    else:
        bounds = state.settings.limits
        message = (_ndarray_message(body, bounds)
                   or wire.decode_message(parse_json(body, bounds)))
    dispatch.check_limits(state, message)
    model_id = message.model or query.get("model") or dispatch.default_model(state)
    loaded = dispatch.acquire_model(state, model_id)
    if streaming:
        return _stream(state, loaded, message)  # releases when the stream ends
    try:
        return _answer(*dispatch.predict(state, loaded, message), return_ndarray)
    finally:
        loaded.release()


def _ndarray_message(body: bytes, bounds: Limits) -> wire.GrpsRequest | None:
    """A body that is only ``{"ndarray": <matrix of numbers>}``, read without a JSON value
    per number (``number_matrix``); ``None`` for any other body."""
    matrix = number_matrix(body, "ndarray", bounds)
    return None if matrix is None else wire.ndarray_request("", matrix)


def _is_binary_body() -> bool:
    if wsgi_environ().get("CONTENT_TYPE") == "application/json":  # the usual case, unparsed
        return False
    if not request.content_type:
        raise InvalidInput("No content type in headers.")
    if request.mimetype == BINARY_MIMETYPE:
        return True
    if request.mimetype == "application/json":
        return False
    raise InvalidInput(f"Unsupported content type {request.content_type!r}: send "
                       "application/json or application/octet-stream.")


def _query() -> Mapping[str, str]:
    """The query's parameters (the first value of each, as ``request.args.get`` gives); none
    (and no parse) without a query string. An ASCII query string is parsed as Werkzeug
    parses it, without the multi-dict it builds (a third of the cost)."""
    query = wsgi_environ().get("QUERY_STRING")
    if not query:
        return {}
    if not query.isascii():
        return request.args
    parameters: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, errors="werkzeug.url_quote"):
        parameters.setdefault(key, value)
    return parameters


def _answer(kind: str, value: Any, return_ndarray: bool) -> Response:
    if return_ndarray:
        if kind != "outputs":
            raise PredictorFailed("No float32 tensors in output. Cannot convert to ndarray.")
        return json_response({"status": wire.OK_STATUS, "ndarray": wire.encode_ndarray(value)})
    if kind == "bin_data":
        return Response(value, mimetype=BINARY_MIMETYPE)
    return json_response(dispatch.answer(kind, value))


def _stream(state: PredictState, loaded: LoadedVersion, message: wire.GrpsRequest) -> Response:
    """One HTTP chunk per message: compact JSON and a newline, or raw bytes for bin_data.

    The first message is computed before the response starts, so a model that fails at
    once gets a proper error status; a later failure becomes a FAILURE message chunk. The
    version *loaded* is held until the last chunk is sent (or the client goes away).
    """
    try:
        items = dispatch.predict_stream(state, loaded, message)
        first = next(items, None)
    except BaseException:
        loaded.release()
        raise
    response = Response(stream_with_context(_chunks(first, items)), mimetype=BINARY_MIMETYPE)
    response.call_on_close(loaded.release)
    return response


def _chunks(first: tuple[str, Any] | None, items: Iterator[tuple[str, Any]]) -> Iterator[bytes]:
    if first is None:
        return
    yield _chunk(*first)
    try:
        for kind, value in items:
            yield _chunk(kind, value)
    except Exception as exc:
        error = as_predict_error(exc)
        yield codecs.dumps(wire.error_body(error.http_status, error.message)) + b"\n"


def _chunk(kind: str, value: Any) -> bytes:
    if kind == "bin_data":
        data: bytes = value
        return data
    return codecs.dumps(dispatch.answer(kind, value)) + b"\n"


# --- metadata ---------------------------------------------------------------------------------

@bp.route(f"{ROOT}/metadata/server", methods=EITHER)
def server_metadata() -> ResponseReturnValue:
    return json_response(wire.message("str_data", dispatch.server_metadata(request_state())))


@bp.post(f"{ROOT}/metadata/model")
def model_metadata() -> ResponseReturnValue:
    state = request_state()
    body = read_json(state)
    name = body.get("str_data") if isinstance(body, dict) else None
    return json_response(wire.message("str_data", dispatch.model_metadata(state, name)))


# --- monitor ----------------------------------------------------------------------------------

def read_metrics() -> Snapshot:
    """The server's metrics now (every protocol's inference requests, all workers), kept
    among this worker's samples for the rates."""
    metrics = request_state().metrics
    if metrics is None:
        raise Unimplemented("metrics are off (PREDICT_METRICS is false)")
    snapshot = metrics.snapshot()
    grps_state().samples.add(snapshot)
    return snapshot


def metric_values(snapshot: Snapshot, samples: Samples) -> dict[str, Any]:
    """The metrics page's values, named as grps names its built-in metrics."""
    total = snapshot.total
    return {
        "*qps": round(samples.rate(10.0), 3),
        "*request_count": total.requests,
        "*fail_count": total.failed,
        "*fail_rate(%)": round(_fail_rate(total), 3),
        "*latency_avg(ms)": round(_latency_avg_ms(total), 3),
        "*latency_max(ms)": total.percentile(100) * 1000,
        "*latency_cdf(ms)": {f"p{p:g}": total.percentile(p) * 1000 for p in (50, 90, 99, 99.9)},
        "workers": snapshot.workers,
    }


def _fail_rate(totals: Totals) -> float:
    return 100.0 * totals.failed / totals.requests if totals.requests else 0.0


def _latency_avg_ms(totals: Totals) -> float:
    return 1000.0 * totals.seconds / totals.requests if totals.requests else 0.0


@bp.get(f"{ROOT}/monitor/metrics")
def monitor_metrics() -> ResponseReturnValue:
    values = metric_values(read_metrics(), grps_state().samples)
    wants = request.accept_mimetypes.best_match(["text/html", "application/json"])
    if request.args.get("format") == "json" or wants == "application/json":
        return json_response(values)
    rows = "".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(str(value))}</td></tr>"
                   for name, value in values.items())
    page = (f"<!doctype html><html><head><title>grps metrics</title></head><body>"
            f"<h1>{html.escape(request_state().settings.process.server_name)}: grps metrics</h1>"
            f"<p>Inference requests of every protocol and every worker of this server. "
            f"Trends: <code>{ROOT}/monitor/series?name=*qps</code>.</p>"
            f"<table>{rows}</table></body></html>")
    return Response(page, mimetype="text/html")


TRENDS: dict[str, Callable[[float, Totals], float]] = {
    "*qps": lambda seconds, delta: delta.requests / seconds if seconds else 0.0,
    "*fail_rate(%)": lambda seconds, delta: _fail_rate(delta),
    "*latency_avg(ms)": lambda seconds, delta: _latency_avg_ms(delta),
    "*latency_max(ms)": lambda seconds, delta: delta.percentile(100) * 1000,
}
"""Trend metrics: the value over one interval between two snapshots (its length in
seconds, and the requests it saw)."""


@bp.get(f"{ROOT}/monitor/series")
def monitor_series() -> ResponseReturnValue:
    """One metric over the last minute (``trend``: one point per interval between the
    snapshots this worker took) or the latency distribution (``cdf``)."""
    name = request.args.get("name", "")
    snapshot = read_metrics()
    if name == "*latency_cdf(ms)":
        total = snapshot.total
        points = [[p, total.percentile(p) * 1000] for p in CDF_PERCENTS]
        return json_response({"label": "cdf", "data": points,
                              "buckets_ms": [b * 1000 for b in LATENCY_BUCKETS if b != INF]})
    trend = TRENDS.get(name)
    if trend is None:
        raise ModelNotFound(f"metric {name!r} not found; known: *qps, *fail_rate(%), "
                            "*latency_avg(ms), *latency_max(ms), *latency_cdf(ms)")
    data = [[i, trend(seconds, later.minus(earlier))] for i, (seconds, earlier, later)
            in enumerate(grps_state().samples.intervals())]
    return json_response({"label": "trend", "data": data})


@bp.route(f"{ROOT}", endpoint="unknown_root", methods=ALL_METHODS)
@bp.route(f"{ROOT}/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str = "") -> ResponseReturnValue:
    """Any other path, or a method a route does not take: grps's status envelope, not HTML
    (404 for an unknown path, 405 for a known one asked with another method)."""
    path = f"{ROOT}/{rest}".rstrip("/")
    if path in _ROUTES:
        raise MethodNotAllowedError(f"Method {request.method} is not allowed for {path}; use "
                                    f"{' or '.join(_ROUTES[path])}.")
    raise ModelNotFound(f"No such grps route: {request.method} {path}")


_ROUTES = {f"{ROOT}/health/{name}": EITHER for name in ("online", "offline", "live", "ready")}
_ROUTES.update({f"{ROOT}/infer/predict": ["POST"], f"{ROOT}/metadata/server": EITHER,
                f"{ROOT}/metadata/model": ["POST"], f"{ROOT}/monitor/metrics": ["GET"],
                f"{ROOT}/monitor/series": ["GET"]})
"""The grps routes and their methods (for the 405 answer)."""


def render_error(exc: Exception) -> ResponseReturnValue:
    error = as_predict_error(exc)
    return json_response(wire.error_body(error.http_status, error.message), error.http_status)


bp.register_error_handler(Exception, error_handler(render_error))
