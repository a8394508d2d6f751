"""One request, REST or gRPC, from arrival to answer: the one place a request's scope opens
and closes.

:meth:`Scopes.open` makes the request's :class:`~flask_predict.request.record.RequestRecord` (its
id: the client's, else a new one unique across the server's workers; protocol, verb, size,
client, the app state its front end answers from, the client's deadline), sets it as
:data:`~flask_predict.request.record.current_request` and counts the request started;
:meth:`Scopes.close` counts it finished with its status and writes its access line. The
REST hooks (:mod:`flask_predict.web.observe`) and the gRPC handlers
(:mod:`flask_predict.grpc.handlers`) are the only callers, so both transports produce the
same record, metrics and access line (probes, the ``health`` verb, are counted but not
access-logged unless asked). Views and the service only fill the record in.

Tracing (:mod:`flask_predict.tracing`) and the payload log (:mod:`flask_predict.payload_log`)
hook in here too, when they are on: the request's span starts at :meth:`Scopes.open` and
ends at :meth:`Scopes.close`, and a sampled request's bodies are kept between the two. What
they read of a request (headers, the attributes of a span, the bodies) each transport says
through its :class:`~.transport.Transport`; with both off, neither is imported.
No Flask here.
"""

from __future__ import annotations

import os
from itertools import count
from time import perf_counter, time
from typing import TYPE_CHECKING, Any

from ..errors import Code, PredictError
from ..observability.access_log import AccessLog
from ..observability.queue_time import HEADER, queue_seconds
from ..request.record import PROBE_VERB, RequestRecord, current_request, usable_id
from ..request.transport import Transport


def probe_answer(error: PredictError) -> bool:
    """Whether *error* is the whole answer of the health probe this thread answers ("no model
    is configured", "still loading"): nothing to log beyond the probe's access line. A
    probe's own failure is logged as any other."""
    record = current_request.get()
    return record is not None and record.verb == PROBE_VERB and error.code is not Code.INTERNAL


if TYPE_CHECKING:
    from ..observability.metrics import Metrics
    from ..payload_log import PayloadLog
    from ..settings.config import Settings
    from ..tracing import Tracing


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


class Scopes:
    """Opens and closes the requests of one app: *state* is what its records carry for the
    front ends (the app's ``PredictState``)."""

    def __init__(self, state: Any, settings: Settings, metrics: Metrics | None,
                 tracing: Tracing | None = None, payloads: PayloadLog | None = None) -> None:
        self.state = state
        self.metrics = metrics
        self.access = AccessLog(settings.observability.access_log == "json") if settings.observability.access_log else None
        self.probes = settings.observability.access_log_probes
        """Whether health probes get access lines (``PREDICT_ACCESS_LOG_PROBES``)."""
        self.ids = RequestIds()
        self.tracing = tracing
        """Starts and ends each request's spans; ``None`` when tracing is off."""
        self.payloads = payloads
        """Keeps a sample of requests and answers; ``None`` when the payload log is off."""

    def open(self, protocol: str, verb: str, request_id: Any, request_bytes: int,
             method: str = "", path: str = "", client: str = "-",
             deadline: float | None = None, carrier: Any = None,
             transport: Transport | None = None) -> RequestRecord:
        """Open a request of *protocol* (``kserve_v2``, ``kserve_v2_grpc`` ...) and make it
        this thread's current one. *request_id* is the client's (kept when usable), else
        ``None``; *deadline* is ``time.monotonic()`` by which the client stops waiting.
        *carrier* is what *transport* reads the request from (tracing, payload log)."""
        if request_id is not None and usable_id(request_id):
            from_client = True
        else:
            request_id, from_client = self.ids.next(), False
        record = RequestRecord(protocol, verb, request_id, from_client, request_bytes)
        record.state = self.state
        record.deadline = deadline
        if self.access is not None:
            record.method = method
            record.path = path
            record.client = client
        current_request.set(record)
        if self.metrics is not None:
            self.metrics.started()
            if transport is not None:
                waited = queue_seconds(transport.header(carrier, HEADER), time())
                if waited is not None:
                    self.metrics.queued(waited)
        if transport is not None:
            if self.tracing is not None:
                self.tracing.start(record, carrier, transport)
            if self.payloads is not None:
                self.payloads.sample(record, carrier, transport)
        return record

    def close(self, record: RequestRecord, status: int, response_bytes: int | None,
              response: Any = None) -> None:
        """The answer is ready: count it, write its access line, end the request.
        *response* is the answer's body (REST) or message (gRPC), for the payload log."""
        current_request.set(None)
        ended = perf_counter()
        if self.metrics is not None:
            self.metrics.finished(record, status, response_bytes, ended)
        if self.tracing is not None:
            self.tracing.end(record, status, response_bytes, ended)
        if self.access is not None and (record.verb != PROBE_VERB or self.probes):
            self.access.write(record, status, response_bytes, ended)
        if self.payloads is not None:
            self.payloads.keep(record, status, response, ended)

    def shutdown(self) -> None:
        """The app is closing: send the spans and payload records still waiting."""
        if self.tracing is not None:
            self.tracing.shutdown()
        if self.payloads is not None:
            self.payloads.shutdown()
