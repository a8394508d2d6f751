"""Around every protocol route: the request's scope, authentication, the request id header.

:func:`install` adds one hook before and one after each request to the extension's own
blueprints only (the host app's routes and hooks stay its own). Before: open the request's
scope (:mod:`flask_predict.core.scope`: the client's ``X-Request-ID`` or a new id, the verb its
protocol's descriptor names), check the token when tokens are configured, and the admin
rule for a route whose verb is ``admin``. After: echo the id, close the scope (metrics,
access line), or for a streamed answer leave it open until its last chunk is sent. Views
and the service only fill in the record.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from flask import Blueprint, Flask, Response, request
from flask.blueprints import BlueprintSetupState
from flask.globals import _cv_request
from flask.typing import ResponseReturnValue

from . import auth
from ..request.record import ADMIN_VERB, PROBE_VERB, RequestRecord, current_request
from ..runtime import memory
from ..core.state import EXTENSION_KEY, PredictState
from ..request.descriptor import Protocol
from ..request.protocol_table import descriptors
from .protocol_http import plain_error
from .current import get_state
from .http_transport import HTTP

REQUEST_ID_HEADER = "X-Request-ID"


class Observer:
    """The hooks of one app."""

    def __init__(self, app: Flask, state: PredictState) -> None:
        settings = state.settings
        self.app = app
        self.scopes = state.scopes
        self.tokens = settings.auth.tokens
        self.admin_tokens = settings.auth.admin_tokens
        self.verbs: dict[str, str] = {}

    def before(self, protocol: Protocol) -> None:
        # Flask's request context variable itself: a look-up through the ``request`` proxy
        # costs several times more
        req = _cv_request.get().request
        environ = req.environ
        endpoint = req.endpoint or ""
        verb = self.verbs.get(endpoint) or self._verb(endpoint, protocol)
        length = environ.get("CONTENT_LENGTH")
        self.scopes.open(protocol.name, verb, environ.get("HTTP_X_REQUEST_ID"),
                         int(length) if length and length.isdigit() else 0,
                         environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""),
                         environ.get("REMOTE_ADDR", "-"), None, req, HTTP)
        if self.tokens and verb != PROBE_VERB:  # probes never need a token
            auth.check_client(self.tokens, self.admin_tokens)
        if verb == ADMIN_VERB:  # a route that changes the server, as its descriptor says
            auth.check_admin()

    def _verb(self, endpoint: str, protocol: Protocol) -> str:
        view = self.app.view_functions.get(endpoint)
        name = getattr(view, "__name__", "") or endpoint.rpartition(".")[2]
        verb = self.verbs[endpoint] = protocol.verb(name)
        return verb

    def after(self, response: Response) -> Response:
        record = current_request.get()
        if record is None:
            return response
        status = response.status_code
        response.headers.add(REQUEST_ID_HEADER, record.request_id)
        if status == 401:
            response.headers.add("WWW-Authenticate", auth.BEARER_CHALLENGE)
        body = response.response  # a body set whole is a list of one bytes: no header parse
        if type(body) is list and len(body) == 1 and type(body[0]) is bytes:
            self.scopes.close(record, status, len(body[0]), body)
        elif response.is_streamed:  # chunks still to come: the scope closes after the last
            chunks = response.response = Streamed(record, body)
            response.call_on_close(lambda: self.scopes.close(record, status, chunks.size))
        else:
            self.scopes.close(record, status, response.content_length, body)
        return response


class Streamed:
    """A streamed answer's chunks, each made inside its request's scope (its record
    current: a log line carries its request id); counts the bytes sent."""

    def __init__(self, record: RequestRecord, chunks: Iterable[str | bytes]) -> None:
        self.record = record
        self.chunks = chunks
        self.iterator = iter(chunks)
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        current_request.set(self.record)
        chunk = next(self.iterator)
        data = chunk if isinstance(chunk, bytes) else chunk.encode()  # as Werkzeug sends it
        self.size += len(data)
        return data

    def close(self) -> None:
        close = getattr(self.chunks, "close", None)
        if close is not None:
            close()


def install(app: Flask, state: PredictState) -> None:
    """Add the hooks to the protocol blueprints of *app*, and the metrics route."""
    observer = Observer(app, state)
    for protocol in descriptors(state.settings.protocols):
        bp_name = protocol.load_blueprint().name
        app.before_request_funcs.setdefault(bp_name, []).append(_before_hook(observer, protocol))
        app.after_request_funcs.setdefault(bp_name, []).append(observer.after)
    if state.metrics is not None and state.settings.pages.metrics_path:
        app.register_blueprint(metrics_bp)


def _before_hook(observer: Observer, protocol: Protocol) -> Callable[[], None]:
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
    setup.add_url_rule(str(state.settings.pages.metrics_path), "metrics", metrics_view,
                       methods=["GET"])


def metrics_view() -> ResponseReturnValue:
    """Every series in Prometheus text format, summed over the server's workers."""
    auth.require_token()
    state = get_state()
    assert state.metrics is not None
    body, content_type = state.metrics.exposition()
    memory.note_size(request.environ, len(body))  # its garbage is given back after
    return Response(body, content_type=content_type)


@metrics_bp.errorhandler(Exception)
def _metrics_error(exc: Exception) -> ResponseReturnValue:
    return plain_error(exc, auth.BEARER_CHALLENGE)
