"""The table of protocols: which exist, and where each one's descriptor is.

Everything that lists protocols (the settings' sections, the blueprints, the gRPC services,
the OpenAPI document, the metrics' verbs, the status page) reads :data:`REGISTRY` through
:func:`descriptors`. This is the one module that loads a protocol's package by name; the
settings reach a protocol's keys only through the :class:`~.descriptor.Section` the table
hands them (:func:`sections`, read by :mod:`flask_predict.settings.app`). No Flask here.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .descriptor import Protocol, Section

REGISTRY: dict[str, str] = {
    "aiplatform": "flask_predict.protocols.aiplatform",
    "grps": "flask_predict.protocols.grps",
    "kserve_v2": "flask_predict.protocols.kserve_v2",
    "mlflow": "flask_predict.protocols.mlflow",
    "tfserving": "flask_predict.protocols.tfserving",
}
"""``PREDICT_PROTOCOLS`` name -> the package whose ``PROTOCOL`` describes it. Adding a
protocol adds one entry here and one package."""


def descriptor(name: str) -> Protocol:
    """The :class:`Protocol` registered as *name*."""
    described: Protocol = import_module(REGISTRY[name]).PROTOCOL
    return described


def descriptors(names: Any = None) -> list[Protocol]:
    """The descriptors of *names* (default: every registered protocol), in that order."""
    return [descriptor(name) for name in (REGISTRY if names is None else names)]


def sections() -> dict[str, Section | None]:
    """Every registered protocol's name and its settings section (``None``: it has no keys of
    its own): what :func:`flask_predict.settings.config.settings_from` reads."""
    return {protocol.name: protocol.settings for protocol in descriptors()}
