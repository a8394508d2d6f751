"""The spans of one request: a server span that continues the caller's trace, and its
children, made from the times the request's record noted.

:meth:`Tracing.start` (from the request's scope, as it opens) reads the caller's trace
context through the transport (W3C ``traceparent`` and ``tracestate`` by default; the
propagators ``OTEL_PROPAGATORS`` names), unless a span is current already (the host app's
own instrumentation of Flask or gRPC made one: ours is then its child), starts the server span with the attributes of
OpenTelemetry's HTTP or RPC conventions, and makes it current while the request runs, so
spans a predictor makes are its children. :meth:`Tracing.end` adds what the answer says
(status, sizes, model name and version) and, for a sampled request, the children: ``decode``
(from the start to the predictor call, with ``wait for model load`` inside when the request
waited for the models' first load), ``predict`` (with ``wait for busy version`` inside when
another thread's call held the version) and ``encode`` (from the predictor's return to the
answer). The children are made after the fact, from ``perf_counter`` times: the request path
pays nothing for them.
"""

from __future__ import annotations

import logging
from time import perf_counter, time_ns
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..request.record import RequestRecord
from ..request.transport import Transport

logger = logging.getLogger(__name__)

INSTRUMENTATION = "flask_predict"
MODEL = "flask_predict.model.name"
VERSION = "flask_predict.model.version"
PROTOCOL = "flask_predict.protocol"
VERB = "flask_predict.verb"
REQUEST_ID = "flask_predict.request_id"
UNTRACED = frozenset({"health"})
"""Verbs whose requests get no span."""
WAIT_NAMES = {"load": "wait for model load", "busy": "wait for busy version"}


class _Headers(Getter[Any]):
    """Reads a propagator's fields through a transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def get(self, carrier: Any, key: str) -> list[str] | None:
        value = self.transport.header(carrier, key)
        return None if value is None else [value]

    def keys(self, carrier: Any) -> list[str]:
        return []


class Tracing:
    """The spans of one app's requests, into *provider*; *owned*: the provider was built
    for this app, and :meth:`shutdown` shuts it down."""

    def __init__(self, provider: Any, owned: bool) -> None:
        self.provider = provider
        self.owned = owned
        self.tracer = provider.get_tracer(INSTRUMENTATION)
        self._getters: dict[int, _Headers] = {}

    def start(self, record: RequestRecord, carrier: Any, transport: Transport) -> None:
        """Start the server span of the request *record* opens (none for a health probe,
        which an orchestrator sends every few seconds)."""
        if record.verb in UNTRACED:
            return
        parent = context.get_current()
        if not trace.get_current_span(parent).get_span_context().is_valid:
            # no instrumentation of the host app (Flask's, gRPC's) started one: the caller's
            getter = self._getters.get(id(transport))
            if getter is None:
                getter = self._getters[id(transport)] = _Headers(transport)
            parent = propagate.extract(carrier, Context(), getter)
        name, attributes = transport.span_start(carrier, record)
        attributes[PROTOCOL] = record.protocol
        attributes[VERB] = record.verb
        offset = time_ns() - int(perf_counter() * 1e9)  # perf_counter -> unix time in ns
        span = self.tracer.start_span(name, parent, SpanKind.SERVER, attributes,
                                      start_time=offset + int(record.started * 1e9))
        found = span.get_span_context()
        if found.is_valid:
            record.trace_id = format(found.trace_id, "032x")
        token = context.attach(trace.set_span_in_context(span, parent))
        record.trace = (span, token, offset, carrier, transport)

    def end(self, record: RequestRecord, status: int, response_bytes: int | None,
            ended: float) -> None:
        """End the request's spans: the answer was ready at *ended* (``perf_counter``)."""
        if record.trace is None:
            return
        span, token, offset, carrier, transport = record.trace
        record.trace = None
        context.detach(token)
        if not span.is_recording():
            return
        attributes, error = transport.span_end(carrier, status, response_bytes)
        attributes[REQUEST_ID] = record.request_id
        if record.model:
            attributes[MODEL] = record.model
            attributes[VERSION] = record.version
        span.set_attributes(attributes)
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR))
        self._children(record, span, offset, ended)
        span.end(end_time=offset + int(ended * 1e9))

    def _children(self, record: RequestRecord, span: Any, offset: int, ended: float) -> None:
        """``decode``, ``predict`` and ``encode`` under *span*, the waits inside them."""
        def child(name: str, parent: Any, start: float, end: float) -> Any:
            made = self.tracer.start_span(name, trace.set_span_in_context(parent),
                                          SpanKind.INTERNAL,
                                          start_time=offset + int(start * 1e9))
            made.end(end_time=offset + int(end * 1e9))
            return made

        waits = record.waits or ()
        if not record.predict_started:  # no predictor call: only what it waited for
            for what, start, end in waits:
                child(WAIT_NAMES[what], span, start, end)
            return
        decode = child("decode", span, record.started, record.predict_started)
        predict = child("predict", span, record.predict_started, record.predict_ended)
        child("encode", span, record.predict_ended, ended)
        for what, start, end in waits:
            child(WAIT_NAMES[what], decode if what == "load" else predict, start, end)

    def shutdown(self) -> None:
        """Send the spans still waiting; shut an owned provider down."""
        try:
            if self.owned:
                self.provider.shutdown()
            elif hasattr(self.provider, "force_flush"):
                self.provider.force_flush()
        except Exception:  # an exporter's failure must not stop the worker's exit
            logger.exception("flask_predict: tracing did not shut down cleanly")
