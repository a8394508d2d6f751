"""What one request did, noted as it runs: the record metrics and the access log read.

The request's scope (:mod:`flask_predict.core.scope`) opens a :class:`RequestRecord` when a
request arrives and sets it as :data:`current_request`; the service notes which model
version it resolved, how long the predictor ran and what the request waited for, without
knowing about Flask; the scope reads the record when the answer is ready (metrics, access
line, trace spans, payload log). Outside a request (warm-up, the reload thread) there is
no record and nothing is noted.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from time import perf_counter
from typing import Any, TypeGuard

INFERENCE_VERBS = frozenset({"predict", "classify", "regress", "explain"})
"""The verbs that run a model: what the monitor pages count as requests and the payload
log samples (not probes, metadata or control)."""
PROBE_VERB = "health"
"""The verb of liveness and readiness probes (each protocol's descriptor names its routes'
verbs): no token needed over REST, no access line unless ``PREDICT_ACCESS_LOG_PROBES``."""
ADMIN_VERB = "admin"
"""The verb of routes and rpcs that change the server (online/offline, load/unload): an
admin token or a loopback client."""

_CLIENT_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")


def usable_id(request_id: object) -> TypeGuard[str]:
    """Whether a client's request id can be kept: short, without spaces or control
    characters (so it cannot forge a log line)."""
    return isinstance(request_id, str) and _CLIENT_ID.fullmatch(request_id) is not None


class RequestRecord:
    """One request: who answered it, which model, and where its time went."""

    __slots__ = ("protocol", "verb", "request_id", "client_id", "request_bytes", "started",
                 "method", "path", "client", "model", "version", "predict_started",
                 "predict_ended", "predict_seconds", "state", "deadline", "trace_id", "trace",
                 "kept", "waits")

    def __init__(self, protocol: str, verb: str, request_id: str, client_id: bool,
                 request_bytes: int) -> None:
        self.protocol = protocol
        self.verb = verb
        self.request_id = request_id
        self.client_id = client_id
        """Whether the client chose the id (its ``X-Request-ID`` header)."""
        self.request_bytes = request_bytes
        self.started = perf_counter()
        self.method = self.path = self.client = ""
        """The HTTP method, path and client address (for the access log)."""
        self.model = ""
        """The resolved model's name ("" until resolved): never a name from the URL."""
        self.version = ""
        self.predict_started = 0.0
        self.predict_ended = 0.0
        self.predict_seconds = 0.0
        """Time spent in predictor calls (a request may make more than one)."""
        self.state: Any = None
        """The app state the request's front end answers from (a ``PredictState``)."""
        self.deadline: float | None = None
        """``time.monotonic()`` by which the client stops waiting (a gRPC call's deadline);
        ``None``: it waits as long as the server lets it."""
        self.trace_id = ""
        """The request's trace id (32 hex digits) when tracing is on."""
        self.trace: Any = None
        """What tracing holds for the request while it runs (its server span)."""
        self.kept: Any = None
        """What the payload log keeps of a sampled request (``None``: not sampled)."""
        self.waits: list[tuple[str, float, float]] | None = None
        """What the request waited for, when it waited: (``"load"`` or ``"busy"``, start,
        end) in ``perf_counter`` time (a model's first load; another call on its version)."""

    def adopt_id(self, request_id: str | None) -> None:
        """A request id from the body (V2's ``id``): used unless the client sent a header."""
        if not self.client_id and usable_id(request_id):
            self.request_id = request_id
            self.client_id = True

    def resolved(self, model: str, version: int) -> None:
        """The service found the version that serves this request."""
        self.model = model
        self.version = str(version)

    def waited(self, what: str, started: float) -> None:
        """The request waited from *started* until now for *what*: ``"load"`` (the models'
        first load) or ``"busy"`` (another call on its version)."""
        wait = (what, started, perf_counter())
        if self.waits is None:
            self.waits = [wait]
        else:
            self.waits.append(wait)

    def predicted(self, model: str, version: int, started: float) -> None:
        """A predictor call that began at *started* (``perf_counter``) just ended."""
        ended = perf_counter()
        if not self.predict_started:
            self.predict_started = started
            self.model = model
            self.version = str(version)
        self.predict_ended = ended
        self.predict_seconds += ended - started


current_request: ContextVar[RequestRecord | None] = ContextVar("flask_predict_request",
                                                               default=None)
"""The record of the request this thread is answering, if any."""
