"""The Flask extension: read settings, load models, register the protocol blueprints.

``init_app`` changes nothing in the process beyond the app it is given: thread pools, GPU
placement and ``gc.freeze`` are the server's business (:mod:`flask_predict.process.server`), unless
``PREDICT_MANAGE_PROCESS`` asks for them.
"""

from __future__ import annotations

import logging

from flask import Flask

from .runtime import resources as runtime
from .core.assembly import assemble
from .core.state import EXTENSION_KEY
from .models.plugins import check_predictor_class, load_predictor_class
from .models.runner_client import runner_loader, runner_lookup, runner_readiness
from .models.sharing import inherited
from .openapi.view import bp as openapi
from .predictor import Predictor
from .request.protocol_table import descriptors
from .settings.app import read_settings
from .settings.config import Settings
from .web import observe
from .web.current import get_state

logger = logging.getLogger(__name__)

__all__ = ["FlaskPredict", "close_app", "get_state"]


class FlaskPredict:
    """Serve machine-learning models over several inference protocols.

    ``FlaskPredict(app)`` or ``predict = FlaskPredict(); predict.init_app(app)``. Settings
    are read once, in :meth:`init_app`. By default it also loads every configured model
    there: a bad setting, a missing plugin or a broken artifact raises at once. With
    ``PREDICT_LOAD_IN_BACKGROUND`` (what the standalone server uses) the routes serve at
    once, liveness answers, and readiness turns true when the models are loaded.
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

    def init_app(self, app: Flask, settings: Settings | None = None) -> None:
        """Load this app's models and add the protocol routes to it; *settings*: those
        already read from the same config (the standalone server's), else read here."""
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError("A 'FlaskPredict' instance is already registered on this app.")
        if settings is None:
            settings = read_settings(app.config)
        if settings.process.manage:
            runtime.prepare_process(settings.process.threads, settings.process.gpus, settings.process.worker_index)
        # under the packaged server, the plugins that cannot be forked run in the runner
        lookup, runner = runner_lookup(self.predictor_class, settings.process.worker_index)
        load = runner_loader(self.predictor_class) if runner is not None else None
        state = assemble(settings, lookup, inherited(), start=False, load=load)
        if runner is not None:
            state.service.ready_checks.append(runner_readiness(runner, state.service))
            if state.metrics is not None:
                from .models.runner_metrics import RunnerCollector

                state.metrics.registry.register(RunnerCollector())
        app.extensions[EXTENSION_KEY] = state
        for protocol in descriptors(settings.protocols):
            app.register_blueprint(protocol.load_blueprint(),
                                   url_prefix=settings.url_prefix or None)
        observe.install(app, state)
        if settings.pages.status_path:
            from .status import bp as status_page

            app.register_blueprint(status_page, url_prefix=settings.pages.status_path)
        if settings.pages.openapi_route:
            app.register_blueprint(openapi, url_prefix=settings.url_prefix or None)
        logger.debug("flask_predict: serving %s over %s%s", [s.name for s in settings.models],
                     list(settings.protocols), " (loading in the background)"
                     if settings.loading.in_background else "")
        if state.service.control.watcher is not None:
            state.service.control.watcher.start()
        if settings.process.manage and not settings.loading.in_background:
            runtime.settle_process(settings.process.threads)
        if "predict" not in app.cli.commands:  # `flask predict ...`; an app's own name wins
            from .web.commands import predict_group

            app.cli.add_command(predict_group)


def close_app(app: Flask) -> None:
    """Stop reloading and release the models *app* loaded (gunicorn's ``worker_exit`` hook
    calls this)."""
    state = app.extensions.get(EXTENSION_KEY)
    if state is not None:
        state.close()
