"""What one app's front ends share: its settings, its :class:`ModelService`, and objects
owned by one protocol or feature. Views reach it with :func:`get_state`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flask import current_app
from flask.globals import _cv_app

from .config import Settings
from .service import ModelService
from .watcher import Watcher

if TYPE_CHECKING:
    from .metrics import Metrics

EXTENSION_KEY = "predict"


@dataclass
class PredictState:
    """The flask-predict state of one app (``app.extensions["predict"]``)."""

    settings: Settings
    service: ModelService
    extras: dict[str, Any] = field(default_factory=dict)
    """Per-app objects owned by one protocol or feature (keyed by its module name)."""
    watcher: Watcher | None = None
    """Loads and reloads models from disk in this worker; ``None`` when models were loaded
    once at ``init_app`` and ``PREDICT_POLL_SECONDS`` is 0."""
    metrics: Metrics | None = None
    """The app's Prometheus series; ``None`` when ``PREDICT_METRICS`` is off."""


def get_state() -> PredictState:
    """The state of the current app (what views use instead of a global).

    Read from Flask's app context variable itself: through the ``current_app`` proxy the
    look-up costs several times more, and views make a few per request."""
    context = _cv_app.get(None)
    app = current_app if context is None else context.app  # the proxy raises outside one
    state: PredictState = app.extensions[EXTENSION_KEY]
    return state
