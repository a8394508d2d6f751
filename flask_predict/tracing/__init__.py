"""OpenTelemetry tracing of every request, REST and gRPC: off unless asked for.

Tracing is on when ``PREDICT_TRACING`` says so, or, left at ``None``, when the standard
variable ``OTEL_TRACES_EXPORTER`` names an exporter (and ``OTEL_SDK_DISABLED`` is not true).
The spans then go to the tracer provider the app was given, else to one built from the
``OTEL_*`` variables (:mod:`.provider`). Each request continues its caller's trace context
(W3C ``traceparent``) with one server span and child spans for decode, the predictor call,
encode and the waits (:mod:`.spans`).

This module imports no OpenTelemetry: with tracing off, nothing of it is imported (the
``otel`` extra need not be installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .switch import EXPORTER_VARIABLE, EXTRA, check_installed, tracing_value, wanted

if TYPE_CHECKING:
    from .spans import Tracing

__all__ = ["EXPORTER_VARIABLE", "EXTRA", "Tracing", "check_installed", "open_tracing",
           "tracing_value", "wanted"]


def open_tracing(setting: Any, service_name: str) -> Tracing:
    """The :class:`~.spans.Tracing` of an app whose tracing is on: into the tracer
    provider *setting* names, else the process's global one when an application set it
    (``opentelemetry-instrument``, say), else one of its own built from the ``OTEL_*``
    variables, named *service_name* unless ``OTEL_SERVICE_NAME`` names it."""
    check_installed()
    from opentelemetry import trace

    from .provider import from_environment
    from .spans import Tracing

    if setting is not None and setting is not True:
        return Tracing(setting, owned=False)
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return Tracing(current, owned=False)
    return Tracing(from_environment(service_name), owned=True)
