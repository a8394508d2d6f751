"""What one app's front ends share, REST and gRPC alike: its settings, its
:class:`ModelService`, its metrics and request scopes, and objects owned by one protocol or
feature. No Flask here: the gRPC servicers get it from their server, the REST views from the
request's scope (or :func:`flask_predict.web.current.get_state`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..settings.config import Settings
from .scope import Scopes
from .service import ModelService

if TYPE_CHECKING:
    from ..observability.metrics import Metrics
    from ..payload_log import PayloadLog
    from ..tracing import Tracing

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
    tracing: Tracing | None = None
    """Each request's spans; ``None`` when tracing is off."""
    payloads: PayloadLog | None = None
    """The payload log; ``None`` when it is off."""
    scopes: Scopes = field(init=False)
    """Opens and closes each request's scope, REST and gRPC alike."""

    def __post_init__(self) -> None:
        self.scopes = Scopes(self, self.settings, self.metrics, self.tracing, self.payloads)

    def close(self) -> None:
        """Stop reloading, flush what is queued (spans, payload records, metrics) and
        release the models (a worker's exit, an app's teardown)."""
        self.service.control.stop()
        self.scopes.shutdown()
        if self.metrics is not None:
            self.metrics.close()
        self.service.repository.close()
