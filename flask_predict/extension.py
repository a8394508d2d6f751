"""The Flask extension: read settings, load models, register the protocol blueprints."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

from . import runtime
from .config import Settings, read_settings
from .plugins import check_predictor_class, load_predictor_class
from .predictor import Predictor
from .repository import ModelRepository
from .watcher import Watcher

logger = logging.getLogger(__name__)

EXTENSION_KEY = "predict"


@dataclass
class PredictState:
    """What one app's views and the service need: its settings and its models."""

    settings: Settings
    repository: ModelRepository
    extras: dict[str, Any] = field(default_factory=dict)
    """Per-app objects owned by one protocol or feature (keyed by its module name)."""
    watcher: Watcher | None = None
    """Reloads models from disk in this worker; ``None`` when ``PREDICT_POLL_SECONDS`` is 0."""


class FlaskPredict:
    """Serve machine-learning models over several inference protocols.

    ``FlaskPredict(app)`` or ``predict = FlaskPredict(); predict.init_app(app)``. Settings
    are read once, in :meth:`init_app`, which also loads every configured model: a bad
    setting, a missing plugin or a broken artifact raises there, not at request time.
    """

    def __init__(self, app: Flask | None = None) -> None:
        self._local: dict[str, type[Predictor]] = {}
        if app is not None:
            self.init_app(app)

    def register_predictor(self, name: str, cls: type[Predictor]) -> None:
        """Make *cls* available as predictor *name*, before installed plugins."""
        self._local[name] = check_predictor_class(cls, name)

    def predictor_class(self, name: str) -> type[Predictor]:
        """The class for predictor *name*: registered here, else an installed plugin."""
        return self._local.get(name) or load_predictor_class(name)

    def init_app(self, app: Flask) -> None:
        """Load this app's models and add the protocol routes to it."""
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError("A 'FlaskPredict' instance is already registered on this app.")
        settings = read_settings(app.config)
        runtime.limit_threads(settings.threads)
        runtime.assign_gpu(settings.gpus, settings.worker_index)
        repository = ModelRepository.load(settings.models, self.predictor_class)
        runtime.limit_loaded_pools(settings.threads)
        runtime.freeze_heap()
        state = PredictState(settings, repository)
        if settings.poll_seconds > 0:
            state.watcher = Watcher(repository, app.config.get("PREDICT_MODELS"),
                                    settings.model_config_file, settings.poll_seconds,
                                    settings.models)
        app.extensions[EXTENSION_KEY] = state

        from .protocols import blueprint

        for name in settings.protocols:
            app.register_blueprint(blueprint(name), url_prefix=settings.url_prefix or None)
        logger.info("flask_predict: serving %s over %s", repository.names(),
                    list(settings.protocols))
        if state.watcher is not None:
            state.watcher.start()


def get_state() -> PredictState:
    """The state of the current app (what views use instead of a global)."""
    state: PredictState = current_app.extensions[EXTENSION_KEY]
    return state


def close_app(app: Flask) -> None:
    """Stop reloading and release the models *app* loaded (gunicorn's ``worker_exit`` hook
    calls this)."""
    state = app.extensions.get(EXTENSION_KEY)
    if state is not None:
        if state.watcher is not None:
            state.watcher.stop()
        state.repository.close()
