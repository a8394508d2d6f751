"""What one app's front ends share, REST and gRPC alike: its settings, its
:class:`ModelService`, its metrics and request scopes, and objects owned by one protocol or
feature. No Flask here: the gRPC servicers get it from their server, the REST views from the
request's scope (or :func:`flask_predict.current.get_state`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import Settings
from .service import ModelService

if TYPE_CHECKING:
    from .metrics import Metrics
    from .scope import Scopes

EXTENSION_KEY = "predict"
"""Where an app keeps its state: ``app.extensions["predict"]``."""


@dataclass
class PredictState:
    """The flask-predict state of one app."""

    settings: Settings
    service: ModelService
    extras: dict[str, Any] = field(default_factory=dict)
    """Per-app objects owned by one protocol or feature (keyed by its module name)."""
    metrics: Metrics | None = None
    """The app's Prometheus series; ``None`` when ``PREDICT_METRICS`` is off."""
    scopes: Scopes | None = None
    """Opens and closes each request's scope (set by ``init_app``)."""
