"""The gunicorn master's side of the process model, what the settings' hooks delegate to:
the worker pool (:class:`~flask_predict.process.rolling.WorkerPool`), the shared models
(:class:`~flask_predict.models.sharing.MasterModels`) and the rollouts that bring them to every
worker, and what the master does as workers fork and exit and as it stops.

The arbiter's own thread (gunicorn's loop: signals, forks, reaping, timeouts) never waits on
a model: loads run on the shared models' watcher thread, closing a dropped version runs on a
thread of its own, and the first load, which comes before any worker exists, still lets a
``TERM``, ``INT`` or ``QUIT`` stop the server at once.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
import time
from typing import Any, Callable

from ..runtime import resources as runtime
from ..models import startup
from ..models.sharing import MasterModels
from . import server_settings
from .rolling import Rollout, WorkerPool
from .runners import Runners
from .server import STATE_DIR_VARIABLE, WORKER_BOOT_ERROR, ready_marks
from .server_logs import route_logs

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)

_pool: WorkerPool | None = None
_models: MasterModels | None = None
_runners: Runners | None = None


def start(arbiter: Any) -> None:
    """gunicorn's ``when_ready`` (listening, before the first worker): own the worker count,
    then load the shared models and watch them."""
    global _pool
    marks = ready_marks()
    if marks is not None:
        _pool = WorkerPool(arbiter, marks)
    import_worker_modules()
    start_runners()
    share_models(arbiter)


def workers_changed(new: int | None, old: int | None) -> None:
    """gunicorn's ``nworkers_changed``, for the worker pool (none before ``when_ready``)."""
    if _pool is not None:
        _pool.workers_changed(new, old)


def reloaded() -> None:
    """gunicorn's ``on_reload`` (``HUP``), for the worker pool."""
    if _pool is not None:
        _pool.reloaded()


def import_worker_modules() -> None:
    """Import here, once, what every worker imports to build its app (Flask, the extension,
    each protocol's blueprint, the metrics): each fork inherits them, so a worker, a
    respawn and every rollout step start in a fraction of the time. None of them starts a
    thread or imports gRPC or a framework."""
    from .. import extension
    from ..observability import metrics  # noqa: F401
    from ..request.protocol_table import descriptors

    for protocol in descriptors():
        protocol.load_blueprint()


def start_runners() -> None:
    """Start the runners (:mod:`flask_predict.process.runners`) before any worker forks,
    unless ``PREDICT_RUNNER`` is off or no model is configured: one per GPU the workers
    would use, else one for the machine."""
    global _runners
    settings = server_settings.current()
    if not settings.loading.runner or not (settings.models or settings.model_config_file):
        return
    gpus = settings.process.gpus if settings.process.gpus is not None \
        else runtime.detected_gpus()
    _runners = Runners(os.environ[STATE_DIR_VARIABLE], gpus)
    _runners.start()


def share_models(arbiter: Any) -> None:
    """Load the versions whose plugin allows it once for every worker
    (:mod:`flask_predict.models.sharing`; not with ``PREDICT_SHARED_MODELS`` off), then watch them
    on a thread of the master, replacing the workers one at a time whenever what it holds
    changes (:mod:`flask_predict.process.rolling`)."""
    global _models
    settings = server_settings.current()
    if not settings.loading.shared_models or not (settings.models or settings.model_config_file):
        return
    route_logs(arbiter.log.error_log, os.environ.get("LOG_LEVEL", "INFO"))
    # one thread for every pool before a framework loads here: no OpenMP or BLAS pool may
    # outlive a load into the workers' fork (each worker sizes its own afterwards)
    runtime.limit_threads(1)
    started = time.perf_counter()
    models = MasterModels(settings.models, settings.environment_models,
                          settings.model_config_file, settings.loading.poll_seconds,
                          state_dir=os.environ.get(STATE_DIR_VARIABLE))
    load_listening(arbiter, models.load)
    try:  # the start-up rule, for what the master loaded: it halts before any worker starts
        startup.check_first_load(models.repository.models(), settings.loading.exit_on_error,
                                 versions_only=True)
    except startup.StartFailed as exc:
        arbiter.log.error("%s", exc.message)
        raise SystemExit(WORKER_BOOT_ERROR)
    logger.info("flask_predict: shared models loaded in the master in %.2fs",
                time.perf_counter() - started)
    _models = models
    if _pool is not None:
        models.start(Rollout(_pool, max(60.0, float(arbiter.timeout))).replace_workers)


def load_listening(arbiter: Any, load: Callable[[], None]) -> None:
    """Run *load* on a thread while this thread, the arbiter's, keeps listening for the
    signals that stop the server (the others wait in its queue for its loop)."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            load()
        except BaseException as exc:  # raised again on the arbiter's thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="flask-predict-first-load", daemon=True).start()
    later: list[Any] = []
    while not done.wait(0.1):
        for sig in drain(arbiter.SIG_QUEUE):
            if sig in STOP_SIGNALS:
                arbiter.log.info("flask_predict: %s while the master loads the shared models: "
                                 "stopping", signal.Signals(sig).name)
                sys.exit(0)
            later.append(sig)
    for sig in later:
        arbiter.SIG_QUEUE.put_nowait(sig)
    if failed:
        raise failed[0]


def drain(signals: Any) -> list[Any]:
    """Everything waiting in gunicorn's signal queue, taken out."""
    found = []
    while True:
        try:
            found.append(signals.get_nowait())
        except queue.Empty:
            return found


def forking(worker: Any) -> None:
    """gunicorn's ``pre_fork``: *worker* inherits what the master holds at its fork."""
    if _models is not None:
        _models.forking(worker)


def worker_gone(arbiter: Any, worker: Any) -> None:
    """gunicorn's ``child_exit``: the worker is no longer ready; its metrics counts stay, its
    live gauges go; the versions only it could still hold are closed."""
    from ..observability.metrics_files import worker_exited

    worker_exited(worker.pid)
    marks = ready_marks()
    if marks is not None and worker.pid:
        marks.mark(worker.pid, False)
    if _models is not None:
        _models.close_due(dict(arbiter.WORKERS).values())


def stopped(arbiter: Any) -> None:
    """gunicorn's ``on_exit``, every worker gone: close what the master loaded, stop the
    runners (each finishes its calls first)."""
    if _models is not None:
        _models.close_all()
    if _runners is not None:
        _runners.stop(float(getattr(arbiter.cfg, "graceful_timeout", 30)))
