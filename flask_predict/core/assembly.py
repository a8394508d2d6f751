"""One core, assembled once without Flask.

:func:`assemble` builds everything a front end answers from (settings, repository, watcher,
control, service, metrics, tracing, payload log, request scopes) into one
:class:`~flask_predict.core.state.PredictState`. The transports are wrapped around it: the Flask
extension registers its blueprints and hooks on it, the gRPC server serves it with no Flask
app at all, and ``flask-predict check`` and the Python API build from the same pieces.
:func:`~flask_predict.models.store.model_store` wires its repository and watcher.
"""

from __future__ import annotations


from ..models import startup
from ..models.control import ModelControl
from ..models.plugins import load_predictor_class
from ..models.repository import Loader, PredictorLookup
from ..models.served import Shelf
from ..models.shared_state import StateDir
from ..models.store import model_store
from ..models.watcher import UNLOADED_MODELS
from ..payload_log import PayloadLog
from ..settings.config import Settings
from ..tracing import open_tracing
from ..tracing import wanted as tracing_wanted
from .service import ModelService
from .state import PredictState


def assemble(settings: Settings, lookup: PredictorLookup = load_predictor_class,
             shelf: Shelf | None = None, start: bool = True, warm: bool = True,
             load: Loader | None = None) -> PredictState:
    """The core of one app, from *settings* (:func:`flask_predict.settings.config.read_settings`).

    The watcher re-reads the config file, never ``PREDICT_MODELS``
    (:attr:`~flask_predict.settings.config.Settings.environment_models`); *lookup* finds a predictor class by plugin name; *shelf* is what a gunicorn worker
    inherited from its master. Without ``PREDICT_LOAD_IN_BACKGROUND`` every model is loaded
    here, and one that does not load raises :class:`~flask_predict.models.startup.StartFailed`;
    with it, the watcher loads them on its thread (started here unless *start* is false).
    *warm* false skips the warm-up requests (a process that forks its workers afterwards).
    *load* loads one version (default: the class's ``from_path``).
    """
    metrics = None
    if settings.observability.metrics:
        from ..observability.metrics import Metrics

        metrics = Metrics()
    background = settings.loading.in_background
    watched = background or settings.loading.poll_seconds > 0
    # models unloaded through the V2 repository extension, shared by the workers
    state_dir = StateDir(settings.process.state_dir) if watched or settings.lazy else None
    unloaded = state_dir.names(UNLOADED_MODELS) if state_dir is not None and watched else None
    repository, watcher = model_store(
        settings.models, settings.environment_models, settings.model_config_file,
        settings.loading.poll_seconds if watched else None, lookup,
        listener=metrics.model_event if metrics else None, shelf=shelf,
        load_first=background, unloaded=unloaded, warm=warm, load=load,
        lazy=settings.lazy, wait_seconds=settings.loading.wait_seconds,
        events=metrics.lazy_event if metrics else None,
        lazy_state=state_dir if settings.lazy else None)
    repository.serve_the_rest = not settings.loading.exit_on_error
    if not background:  # a model that does not load raises here
        skipped = unloaded.read() if unloaded is not None else frozenset()
        repository.sync(spec for spec in settings.models if spec.name not in skipped)
        startup.check_first_load(repository.models(), settings.loading.exit_on_error)
    control = ModelControl(repository, settings.models, watcher, settings.loading.wait_seconds)
    service = ModelService(repository, settings.loading.wait_seconds if background else 0.0,
                           settings.timeout_seconds, metrics, control)
    tracing = (open_tracing(settings.observability.tracing, settings.process.server_name)
               if tracing_wanted(settings.observability.tracing) else None)
    payloads = PayloadLog(settings.observability.payload_log, metrics) if settings.observability.payload_log else None
    state = PredictState(settings, service, metrics=metrics, tracing=tracing,
                         payloads=payloads)
    if watcher is not None:
        if background:  # the start-up rule, once the first load is done
            watcher.after_first_load(lambda: startup.settle(
                repository.models(), settings.loading.exit_on_error))
        if start:
            watcher.start()
    return state
