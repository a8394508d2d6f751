"""Whether tracing is on, decided without importing OpenTelemetry: ``PREDICT_TRACING``, else
the standard ``OTEL_*`` variables; and whether the OpenTelemetry SDK is installed."""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Mapping

from ..errors import ConfigError

EXPORTER_VARIABLE = "OTEL_TRACES_EXPORTER"
DISABLED_VARIABLE = "OTEL_SDK_DISABLED"
EXTRA = "pip install 'flask-predict[otel]'"


def tracing_value(value: Any) -> Any:
    """The ``PREDICT_TRACING`` setting: ``None`` (the environment decides), ``True``,
    ``False``, or a tracer provider (an object with ``get_tracer``)."""
    if value is None or isinstance(value, bool) or hasattr(value, "get_tracer"):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.lower() in ("true", "1", "yes")
    raise ConfigError("PREDICT_TRACING must be true, false or an OpenTelemetry tracer "
                      f"provider, got {value!r}")


def wanted(setting: Any, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether tracing is on, for the ``PREDICT_TRACING`` value *setting* (see
    :func:`tracing_value`) and the ``OTEL_*`` variables in *environ*."""
    if setting is not None:
        return setting is not False
    if environ.get(DISABLED_VARIABLE, "").strip().lower() == "true":
        return False
    names = [name.strip() for name in environ.get(EXPORTER_VARIABLE, "").split(",")]
    return any(name and name.lower() != "none" for name in names)


def check_installed() -> None:
    """Raise :class:`ConfigError` unless the OpenTelemetry SDK is installed (without
    importing it: gunicorn's master checks this before it forks)."""
    find = importlib.util.find_spec
    if find("opentelemetry") is None or find("opentelemetry.sdk") is None:
        raise ConfigError(f"tracing is on ({EXPORTER_VARIABLE} or PREDICT_TRACING) but the "
                          f"OpenTelemetry SDK is not installed: {EXTRA}")
