"""The AI Platform and Vertex AI section of the settings: Vertex AI's container routes and
endpoints, and the projects ``/v1/projects/<p>/...`` accepts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...errors import ConfigError
from ...settings.values import route_value, str_list
from ...types import ModelSpec


@dataclass(frozen=True)
class AiPlatformSettings:
    """Validated ``PREDICT_VERTEX_*`` and ``PREDICT_AIPLATFORM_*`` keys."""

    vertex_predict_route: str | None
    """Vertex AI custom container predict route (``AIP_PREDICT_ROUTE``)."""
    vertex_health_route: str | None
    """Vertex AI custom container health route (``AIP_HEALTH_ROUTE``)."""
    vertex_model: str | None
    """The model the Vertex AI routes serve; default: the only configured model."""
    vertex_endpoints: Mapping[str, tuple[str, str | None]] | None
    """Vertex AI endpoint id -> (model, version or None); ``None``: the id names the model."""
    projects: frozenset[str] | None
    """The projects ``/v1/projects/<p>/...`` accepts; ``None``: any."""


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> AiPlatformSettings:
    return AiPlatformSettings(
        vertex_predict_route=route_value(values, "PREDICT_VERTEX_PREDICT_ROUTE"),
        vertex_health_route=route_value(values, "PREDICT_VERTEX_HEALTH_ROUTE"),
        vertex_model=values["PREDICT_VERTEX_MODEL"] or None,
        vertex_endpoints=read_endpoints(values["PREDICT_VERTEX_ENDPOINTS"], models),
        projects=(None if values["PREDICT_AIPLATFORM_PROJECTS"] is None else
                  frozenset(str_list(values, "PREDICT_AIPLATFORM_PROJECTS"))))


def read_endpoints(value: Any, models: tuple[ModelSpec, ...]
                           ) -> dict[str, tuple[str, str | None]] | None:
    """``PREDICT_VERTEX_ENDPOINTS``: ``{"<endpoint id>": "<model>"}`` or
    ``{"<endpoint id>": {"model": "<model>", "version": "<name or number>"}}``, each naming
    a configured model and, optionally, one of its version names or a version number."""
    key = "PREDICT_VERTEX_ENDPOINTS"
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"{key} is not valid JSON: {exc}")
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must map endpoint ids to models, got {value!r}")
    endpoints: dict[str, tuple[str, str | None]] = {}
    for endpoint, target in value.items():
        if not isinstance(endpoint, str) or not endpoint or "/" in endpoint or ":" in endpoint:
            raise ConfigError(f"{key}: endpoint id {endpoint!r} must be non-empty, without "
                              "'/' or ':'")
        version = None
        if isinstance(target, Mapping):
            unknown = sorted(set(target) - {"model", "version"})
            if unknown:
                raise ConfigError(f"{key}, endpoint {endpoint!r}: unknown key(s) {unknown}; "
                                  "known: ['model', 'version']")
            version = None if target.get("version") is None else str(target["version"])
            target = target.get("model")
        spec = next((m for m in models if m.name == target), None)
        if spec is None:
            raise ConfigError(f"{key}, endpoint {endpoint!r}: no model {target!r}; "
                              f"configured: {sorted(m.name for m in models)}")
        if version is not None and version not in spec.labels and not version.isdigit():
            raise ConfigError(f"{key}, endpoint {endpoint!r}: version {version!r} is neither "
                              f"a version name of {target!r} nor a number")
        endpoints[endpoint] = (target, version)
    return endpoints


def of(settings: HasSections) -> AiPlatformSettings:
    """This protocol's section of *settings*."""
    section: AiPlatformSettings = settings.sections["aiplatform"]
    return section


SECTION = Section(
    defaults={"PREDICT_VERTEX_PREDICT_ROUTE": None, "PREDICT_VERTEX_HEALTH_ROUTE": None,
              "PREDICT_VERTEX_MODEL": None, "PREDICT_VERTEX_ENDPOINTS": None,
              "PREDICT_AIPLATFORM_PROJECTS": None},
    read=read,
    # what Vertex AI sets in a custom container (``AIP_HTTP_PORT`` is the bind's)
    environ={"AIP_PREDICT_ROUTE": "PREDICT_VERTEX_PREDICT_ROUTE",
             "AIP_HEALTH_ROUTE": "PREDICT_VERTEX_HEALTH_ROUTE"},
)
