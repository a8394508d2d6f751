"""Protocol adapters: one blueprint per wire protocol, all over the same models."""

from __future__ import annotations

from importlib import import_module

from flask import Blueprint

PROTOCOL_MODULES = {
    "aiplatform": "flask_predict.protocols.aiplatform",
    "grps": "flask_predict.protocols.grps",
    "kserve_v2": "flask_predict.protocols.kserve_v2",
    "tfserving": "flask_predict.protocols.tfserving",
}
"""``PREDICT_PROTOCOLS`` name -> module holding that protocol's blueprint ``bp``."""


def blueprint(name: str) -> Blueprint:
    """The blueprint of protocol *name* (imported on first use)."""
    bp: Blueprint = import_module(PROTOCOL_MODULES[name]).bp
    return bp
