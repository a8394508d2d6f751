"""A tracer provider built from the standard ``OTEL_*`` variables, as an OpenTelemetry SDK
would build it: the resource from ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``,
the sampler from ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG`` (the SDK reads
them), one batch span processor (``OTEL_BSP_*``) per exporter ``OTEL_TRACES_EXPORTER``
names, each exporter reading its own variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` ...).

``otlp`` is OTLP over HTTP (``http/protobuf``, the specification's default, which the
``otel`` extra installs) unless ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or
``OTEL_EXPORTER_OTLP_PROTOCOL`` says ``grpc``; any other name is looked up among the
installed exporters (entry points ``opentelemetry_traces_exporter``: ``console``,
``otlp_proto_grpc``, ``zipkin_json`` ...).

Built in each worker after gunicorn's fork: the processors' threads belong to the worker.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any, Mapping

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ..errors import ConfigError
from .switch import EXPORTER_VARIABLE, EXTRA

GROUP = "opentelemetry_traces_exporter"
PROTOCOLS = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
PACKAGES = {"otlp_proto_http": "opentelemetry-exporter-otlp-proto-http",
            "otlp_proto_grpc": "opentelemetry-exporter-otlp-proto-grpc"}


def exporter_names(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The entry point names of the exporters ``OTEL_TRACES_EXPORTER`` lists (``otlp``
    resolved to its protocol's); ``otlp`` when it lists none (tracing turned on by
    ``PREDICT_TRACING``)."""
    listed = [name.strip() for name in environ.get(EXPORTER_VARIABLE, "").split(",")]
    listed = [name for name in listed if name and name.lower() != "none"] or ["otlp"]
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    names = []
    for name in listed:
        if name == "otlp":
            if protocol not in PROTOCOLS:
                raise ConfigError(f"OTLP protocol {protocol!r} is not supported; use one of "
                                  f"{sorted(PROTOCOLS)}")
            name = PROTOCOLS[protocol]
        names.append(name)
    return names


def exporter_class(name: str) -> Any:
    """The installed span exporter class registered as *name*."""
    found = {point.name: point for point in entry_points(group=GROUP)}
    if name not in found:
        package = PACKAGES.get(name)
        hint = f"pip install {package}" if package else f"installed: {sorted(found)}"
        raise ConfigError(f"{EXPORTER_VARIABLE}: no span exporter {name!r} is installed "
                          f"({hint}; the otel extra: {EXTRA})")
    return found[name].load()


def from_environment(service_name: str, environ: Mapping[str, str] = os.environ
                     ) -> TracerProvider:
    """A provider exporting to what the ``OTEL_*`` variables name."""
    classes = [exporter_class(name) for name in exporter_names(environ)]
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    provider = TracerProvider(resource=resource)
    for cls in classes:
        provider.add_span_processor(BatchSpanProcessor(cls()))
    return provider
