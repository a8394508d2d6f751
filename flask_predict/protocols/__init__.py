"""Protocol front ends: one package per wire protocol, all over the same models.

A protocol package owns everything of its protocol: wire code, REST views, gRPC servicer,
OpenAPI part, verbs and settings section. It describes itself once, as the :class:`Protocol`
its ``__init__`` names ``PROTOCOL``; everything that lists protocols (the settings, the
blueprints, the gRPC services, the OpenAPI document, the metrics' verbs, the status page)
reads :data:`REGISTRY` through :func:`descriptors`. The descriptor names its Flask and gRPC
halves by import path, so reading it imports neither Flask nor grpcio.

No Flask here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable, Mapping

REGISTRY: dict[str, str] = {
    "aiplatform": "flask_predict.protocols.aiplatform",
    "grps": "flask_predict.protocols.grps",
    "kserve_v2": "flask_predict.protocols.kserve_v2",
    "tfserving": "flask_predict.protocols.tfserving",
}
"""``PREDICT_PROTOCOLS`` name -> the package whose ``PROTOCOL`` describes it. Adding a
protocol adds one entry here and one package."""


@dataclass(frozen=True)
class Section:
    """A protocol's own settings: its ``PREDICT_*`` keys, read by the protocol itself."""

    defaults: Mapping[str, Any]
    """Each key with its default."""
    read: Callable[[Mapping[str, Any], tuple[Any, ...]], Any]
    """``read(values, models)``: the validated section (raises ``ConfigError`` naming the
    key) from every setting's value and the configured ``ModelSpec``s."""
    environ: Mapping[str, str] = field(default_factory=dict)
    """Container environment variables that set one of its keys (variable -> key)."""


@dataclass(frozen=True)
class TryRequest:
    """How the status page's form asks a model in this protocol: ``path`` with ``{model}``,
    and a JSON ``body`` template whose strings ``$rows`` (the rows typed in), ``$flat`` (the
    same values in one list), ``$shape``, ``$input``, ``$datatype`` (the model's first input)
    and ``$model`` are filled in by the page."""

    path: str
    body: Any


@dataclass(frozen=True)
class Protocol:
    """What one protocol adds to an app, said once."""

    name: str
    """Its ``PREDICT_PROTOCOLS`` name; its blueprint is ``predict_<name>``."""
    title: str
    blueprint: str
    """``module:attribute`` of its Flask blueprint (imported when an app serves it)."""
    verbs: Mapping[str, str]
    """REST view function name -> the ``verb`` of metrics and access lines (``health``
    never needs a token, ``admin`` changes the server). A name not listed is its own verb."""
    services: Mapping[str, str] = field(default_factory=dict)
    """Full gRPC service name -> ``module:Class`` of its servicer."""
    rpc_verbs: Mapping[str, str] = field(default_factory=dict)
    """gRPC rpc name -> its verb, as :attr:`verbs` for views."""
    openapi: str | None = None
    """``module:attribute`` of its part of the OpenAPI document."""
    settings: Section | None = None
    try_request: TryRequest | None = None

    def load_blueprint(self) -> Any:
        """The Flask blueprint (imports the views, and so Flask)."""
        return _attribute(self.blueprint)

    def load_servicers(self) -> dict[str, Any]:
        """Full service name -> servicer class (imports grpcio's messages)."""
        return {name: _attribute(path) for name, path in self.services.items()}

    def load_openapi(self) -> Any:
        return _attribute(self.openapi) if self.openapi else None

    def verb(self, view: str) -> str:
        """The verb of REST view *view*."""
        return self.verbs.get(view, view)

    def rpc_verb(self, rpc: str) -> str:
        """The verb of gRPC rpc *rpc*."""
        return self.rpc_verbs.get(rpc, rpc)


def descriptor(name: str) -> Protocol:
    """The :class:`Protocol` registered as *name*."""
    described: Protocol = import_module(REGISTRY[name]).PROTOCOL
    return described


def descriptors(names: Any = None) -> list[Protocol]:
    """The descriptors of *names* (default: every registered protocol), in that order."""
    return [descriptor(name) for name in (REGISTRY if names is None else names)]


def _attribute(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(import_module(module), attribute)
