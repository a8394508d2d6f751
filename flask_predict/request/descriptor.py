"""What a protocol says of itself, once: the :class:`Protocol` descriptor its package names
``PROTOCOL``, its settings :class:`Section` and the status page's :class:`TryRequest`.

These are plain data; the descriptor names its Flask and gRPC halves by import path, so
reading it imports neither Flask nor grpcio. A protocol's package imports this module and
nothing of the table that lists protocols (:mod:`.protocol_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable, Mapping
from typing import Protocol as Interface


class HasSections(Interface):
    """What a protocol's ``of(settings)`` reads: the sections the settings hold, by protocol."""

    @property
    def sections(self) -> Mapping[str, Any]: ...


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


def _attribute(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(import_module(module), attribute)
