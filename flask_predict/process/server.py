"""The master's side of a deployment: what the gunicorn settings' master hooks
(:mod:`flask_predict.gunicorn_config`) delegate to: the configuration check, shared
folders, readiness from scratch, each worker's index, a binary upgrade's hand-over; and the
names both sides share. The shared models are :mod:`.master`'s, each worker's hooks
:mod:`.worker_hooks`', the log's side :mod:`.server_logs`. Nothing here runs when the
extension is embedded in another app.
"""

from __future__ import annotations

import os
from typing import Any

from .. import tracing
from ..models import startup
from ..errors import ConfigError
from ..models.shared_state import create_server_dir
from . import server_settings
from .readiness import ReadyMarks
from .server_logs import route_logs

WORKER_INDEX_VARIABLE = "FLASK_PREDICT_WORKER_INDEX"
STATE_DIR_VARIABLE = "FLASK_PREDICT_STATE_DIR"
SERVER_WORKERS_VARIABLE = "PREDICT_SERVER_WORKERS"
"""How many workers the master runs (readiness waits for all of them); not a
``FLASK_`` variable, so no app reads it as a setting."""
UPGRADED_FROM_VARIABLE = "PREDICT_UPGRADED_FROM"
"""In a server that a binary upgrade (``USR2``) started: the state folder of the server it
upgrades, whose ready workers serve while this one's workers load (not a ``FLASK_``
variable)."""
INDEX_ATTRIBUTE = "flask_predict_index"
"""Where the master keeps each gunicorn worker object's index."""
GRPC_SERVER_KEY = "grpc_server"
GRPC_MODULES = ("grpc", "grpc_health", "grpc_reflection", "google.protobuf")
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def share_cores(workers: int) -> None:
    """Tell each worker how many siblings it has, so its thread pools default to its share
    of the cores (``PREDICT_WORKERS``; an explicit ``FLASK_PREDICT_THREADS`` wins)."""
    os.environ.setdefault("FLASK_PREDICT_WORKERS", str(workers))


def share_timeout(timeout: float) -> None:
    """Bound every predictor call below gunicorn's worker *timeout* (80% of it), so a long
    prediction answers the protocol's timeout error instead of getting its worker killed;
    ``FLASK_PREDICT_TIMEOUT_SECONDS`` and a model's ``timeout_seconds`` win."""
    if timeout > 0:
        os.environ.setdefault("FLASK_PREDICT_TIMEOUT_SECONDS", f"{timeout * 0.8:g}")


def share_state_dir() -> str:
    """Give every worker of this server one folder for shared state (grps online/offline;
    see :mod:`flask_predict.models.shared_state`), unless ``FLASK_PREDICT_STATE_DIR`` is set
    already. Called in the master; the folder is removed when the master exits."""
    if not os.environ.get(STATE_DIR_VARIABLE):
        os.environ[STATE_DIR_VARIABLE] = create_server_dir()
    return os.environ[STATE_DIR_VARIABLE]


def share_metrics_dir() -> str:
    """Point prometheus_client's multiprocess mode at one folder for every worker:
    ``PROMETHEUS_MULTIPROC_DIR`` when set, else ``prometheus`` in the state folder. Called
    in the master before any worker starts."""
    if not os.environ.get(METRICS_DIR_VARIABLE):
        os.environ[METRICS_DIR_VARIABLE] = os.path.join(share_state_dir(), "prometheus")
    return os.environ[METRICS_DIR_VARIABLE]


def keep_upgrades_importable(arbiter: Any) -> None:
    """Make gunicorn's binary upgrade (``kill -USR2``) start a master that imports.

    The new master is ``sys.executable`` with the old one's ``sys.argv``. Under ``python -m
    gunicorn`` (as ``flask-predict serve`` runs it) ``sys.argv[0]`` is gunicorn's
    ``__main__.py``, so the new master would run that file as a script, with gunicorn's own
    folder first on ``sys.path``: its ``http`` package hides the standard library's, and the
    app's import stops at ``No module named 'http.server'``. The re-exec runs ``-m
    gunicorn`` again instead (gunicorn's issue 3281); a master started by the ``gunicorn``
    script is left as it is."""
    import gunicorn

    args = list(arbiter.START_CTX.get("args") or ())
    main = os.path.join(os.path.dirname(os.path.realpath(gunicorn.__file__)), "__main__.py")
    if len(args) > 1 and os.path.realpath(args[1]) == main:
        arbiter.START_CTX["args"] = [args[0], "-m", "gunicorn", *args[2:]]


def hand_over(arbiter: Any) -> None:
    """gunicorn's ``pre_exec``, in the forked process about to become a binary upgrade's new
    master: hand it this server's state folder, so that its workers take no connection
    while they load and this server's workers serve (:func:`hold_until_serving`). A folder
    the operator set is shared by both servers already."""
    folder = os.environ.get(STATE_DIR_VARIABLE)
    environ = arbiter.cfg.env_orig  # what gunicorn builds the new master's environment from
    if folder and environ.get(STATE_DIR_VARIABLE) != folder:
        environ[UPGRADED_FROM_VARIABLE] = folder


def check_configuration(log: Any) -> None:
    """Validate settings, model folders and model options in the master, importing no
    framework (plugins' manifests only; :func:`flask_predict.models.startup.check_models`).

    Logs the problem in one line and raises ``SystemExit``, which stops gunicorn before it
    forks workers.
    """
    try:
        settings = server_settings.read()
        startup.check_models(settings.models, settings.loading.exit_on_error)
        if settings.grpc.port is not None:
            check_grpc_installed()
        if tracing.wanted(settings.observability.tracing):
            tracing.check_installed()  # without importing it: the workers build exporters
        if not settings.models:
            log.warning("flask_predict: %s", startup.NO_MODEL)
    except ConfigError as exc:
        log.error("flask_predict: configuration error: %s", exc.message)
        raise SystemExit(1)  # the line above says why; a message here would print it twice


def assign_worker_index(arbiter: Any, worker: Any) -> int:
    """In the master, before the fork: the lowest index no live worker holds, so a
    respawned worker takes the index (and GPU) its dead predecessor freed."""
    held = {getattr(w, INDEX_ATTRIBUTE, None) for w in arbiter.WORKERS.values()}
    index = next(i for i in range(len(held) + 1) if i not in held)
    setattr(worker, INDEX_ATTRIBUTE, index)
    return index


STARTED = "started"
"""A file in the shared state folder once a worker has passed the start-up rule: from then
on a worker (a respawned one) that cannot load a model goes on with the others."""
START_FAILED = "start-failed"
"""Created by the one worker that logs why the server does not start."""
WORKER_BOOT_ERROR = 3
"""The exit status with which gunicorn's master halts the server ("Worker failed to boot")
instead of starting another worker."""


def ready_marks() -> ReadyMarks | None:
    """The server's readiness markers (needs the shared folder and the worker count)."""
    folder = os.environ.get(STATE_DIR_VARIABLE)
    workers = os.environ.get(SERVER_WORKERS_VARIABLE)
    if not folder or not workers:
        return None
    return ReadyMarks(folder, int(workers))


def server_starting(arbiter: Any) -> None:
    """In the master, before any worker: check the configuration, empty the metrics folder
    of a previous server, and start readiness from scratch for *arbiter*'s worker count. The
    master's own flask_predict lines go to gunicorn's error log too."""
    route_logs(arbiter.log.error_log, os.environ.get("LOG_LEVEL", "INFO"))
    check_configuration(arbiter.log)
    from ..observability.metrics_files import prepare_directory

    # counts restart with the server, as every Prometheus counter may
    prepare_directory(share_metrics_dir())
    os.environ[SERVER_WORKERS_VARIABLE] = str(arbiter.num_workers)
    folder = share_state_dir()
    for name in (STARTED, START_FAILED):  # a folder set by the user outlives a server
        if os.path.exists(os.path.join(folder, name)):
            os.unlink(os.path.join(folder, name))
    marks = ready_marks()
    if marks is not None:
        marks.clear()
        marks.want(arbiter.num_workers)


def keep_grpc_fork_support_off() -> None:
    """gRPC's fork support stays off (unless the environment sets it).

    grpcio is not fork-safe: a process that has started gRPC threads must not fork. Here
    only workers use gRPC: the master never imports it, and each worker creates its server
    after the fork (:func:`start_grpc`) and never forks again, so the fork handlers that
    ``GRPC_ENABLE_FORK_SUPPORT`` installs (meant for clients, unsupported for servers)
    would only cost time on every fork.
    """
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


def check_grpc_installed() -> None:
    """Raise :class:`ConfigError` unless the ``grpc`` extra is installed (without
    importing it: the master must not load grpcio)."""
    import importlib.util

    missing = [name for name in GRPC_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"PREDICT_GRPC_PORT is set but {missing} are not installed: "
                          "pip install 'flask-predict[grpc]'")


