"""Around every protocol route: request ids, authentication, metrics and the access log.

:func:`install` adds one hook before and one after each request to the extension's own
blueprints only (the host app's routes and hooks stay its own). Before: open the request's
:class:`~flask_predict.record.RequestRecord` (the client's ``X-Request-ID`` or a new id),
check the token when tokens are configured. After: echo the id, count the request in the
metrics, write one access-log line. Views and the service only fill in the record.
"""

from __future__ import annotations

import os
from itertools import count
from time import perf_counter
from typing import TYPE_CHECKING, Callable

from flask import Blueprint, Flask, Response
from flask.blueprints import BlueprintSetupState
from flask.globals import _cv_request
from flask.typing import ResponseReturnValue

from . import auth
from .access_log import AccessLog
from .state import EXTENSION_KEY, PredictState, get_state
from .protocols import blueprint
from .protocols._http import plain_error
from .record import RequestRecord, current_request, usable_id

if TYPE_CHECKING:
    from .metrics import Metrics

REQUEST_ID_HEADER = "X-Request-ID"

VERBS = {"predict": "predict", "infer": "predict", "vertex_predict": "predict",
         "endpoint_predict": "predict", "endpoint_raw_predict": "predict",
         "classify": "classify", "regress": "regress",
         "live": "health", "ready": "health", "model_ready": "health", "vertex_health": "health",
         "server_metadata": "metadata", "model_metadata": "metadata", "describe": "metadata",
         "model_status": "status", "online": "admin", "offline": "admin",
         "repository_control": "admin",
         "repository_index": "metadata", "model_statistics": "monitor",
         "monitor_metrics": "monitor", "monitor_series": "monitor",
         "unknown_path": "unknown", "missing_model": "unknown", "dispatch": "other"}
"""View function name -> the ``verb`` label. Health probes never need a token. ``other``:
TF Serving paths its own matching routes (another letter case, a method it refuses)."""
OPEN_VERBS = frozenset({"health"})


class RequestIds:
    """Ids unique across the workers of a server: a random prefix per process, a counter."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.prefix = os.urandom(6).hex() + "-"
        self.counter = count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):x}"


class Observer:
    """The hooks of one app."""

    def __init__(self, app: Flask, state: PredictState) -> None:
        settings = state.settings
        self.app = app
        self.metrics: Metrics | None = state.metrics
        self.access = AccessLog(settings.access_log == "json") if settings.access_log else None
        self.tokens = settings.auth_tokens
        self.admin_tokens = settings.admin_tokens
        self.ids = RequestIds()
        self.verbs: dict[str, str] = {}

    def before(self, protocol: str) -> None:
        # Flask's request context variable itself: a look-up through the ``request`` proxy
        # costs several times more
        req = _cv_request.get().request
        environ = req.environ
        request_id = environ.get("HTTP_X_REQUEST_ID")
        if request_id is not None and usable_id(request_id):
            from_client = True
        else:
            request_id, from_client = self.ids.next(), False
        endpoint = req.endpoint or ""
        verb = self.verbs.get(endpoint) or self._verb(endpoint)
        length = environ.get("CONTENT_LENGTH")
        record = RequestRecord(protocol, verb, request_id, from_client,
                               int(length) if length and length.isdigit() else 0)
        if self.access is not None:
            record.method = environ.get("REQUEST_METHOD", "")
            record.path = environ.get("PATH_INFO", "")
            record.client = environ.get("REMOTE_ADDR", "-")
        current_request.set(record)
        if self.metrics is not None:
            self.metrics.started()
        if self.tokens and verb not in OPEN_VERBS:
            auth.check_client(self.tokens, self.admin_tokens)

    def _verb(self, endpoint: str) -> str:
        view = self.app.view_functions.get(endpoint)
        name = getattr(view, "__name__", "") or endpoint.rpartition(".")[2]
        verb = self.verbs[endpoint] = VERBS.get(name, name)
        return verb

    def after(self, response: Response) -> Response:
        record = current_request.get()
        if record is None:
            return response
        current_request.set(None)
        ended = perf_counter()
        status = response.status_code
        response.headers.add(REQUEST_ID_HEADER, record.request_id)
        if status == 401:
            response.headers.add("WWW-Authenticate", auth.BEARER_CHALLENGE)
        body = response.response  # a body set whole is a list of one bytes: no header parse
        size = (len(body[0]) if type(body) is list and len(body) == 1 and type(body[0]) is bytes
                else response.content_length)
        if self.metrics is not None:
            self.metrics.finished(record, status, size, ended)
        if self.access is not None:
            self.access.write(record, status, size, ended)
        return response


def install(app: Flask, state: PredictState) -> None:
    """Add the hooks to the protocol blueprints of *app*, and the metrics route."""
    observer = Observer(app, state)
    for name in state.settings.protocols:
        bp_name = blueprint(name).name
        app.before_request_funcs.setdefault(bp_name, []).append(_before_hook(observer, name))
        app.after_request_funcs.setdefault(bp_name, []).append(observer.after)
    if state.metrics is not None and state.settings.metrics_path:
        app.register_blueprint(metrics_bp)


def _before_hook(observer: Observer, protocol: str) -> Callable[[], None]:
    """A plain function, not a ``partial``: Flask checks every hook for a coroutine on every
    request, and unwrapping a partial doubles that."""
    def before() -> None:
        observer.before(protocol)
    return before


# --- GET /metrics ---------------------------------------------------------------------------

metrics_bp = Blueprint("predict_metrics", __name__)


@metrics_bp.record_once
def _add_route(setup: BlueprintSetupState) -> None:
    state: PredictState = setup.app.extensions[EXTENSION_KEY]
    setup.add_url_rule(str(state.settings.metrics_path), "metrics", metrics_view,
                       methods=["GET"])


def metrics_view() -> ResponseReturnValue:
    """Every series in Prometheus text format, summed over the server's workers."""
    auth.require_token()
    state = get_state()
    assert state.metrics is not None
    body, content_type = state.metrics.exposition()
    return Response(body, content_type=content_type)


@metrics_bp.errorhandler(Exception)
def _metrics_error(exc: Exception) -> ResponseReturnValue:
    return plain_error(exc, auth.BEARER_CHALLENGE)
