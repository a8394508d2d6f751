"""The server side of a deployment: what the gunicorn settings' hooks
(:mod:`flask_predict.gunicorn_config`) delegate to.

In the master: the configuration check, shared folders, the shared models, each worker's
index. In each worker: process-wide setup (thread pools, GPU, ``gc.freeze``; see
:mod:`.runtime`), the start-up rule, release at exit. The log's side is
:mod:`.server_logs`. Nothing here runs when the extension is embedded in another app.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from .. import tracing
from ..runtime import deadline, resources as runtime
from ..models import startup
from ..runtime.memory import release
from ..core.state import EXTENSION_KEY, PredictState
from ..errors import ConfigError
from ..extension import close_app
from ..models.shared_state import create_server_dir
from . import server_settings
from .readiness import ReadyMarks, any_marked
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


def worker_started(worker: Any) -> None:
    """In the worker, before the app loads: its index, thread pools and GPU."""
    index = getattr(worker, INDEX_ATTRIBUTE, 0)
    os.environ[WORKER_INDEX_VARIABLE] = str(index)
    settings = server_settings.read()  # the app this worker builds is handed them
    runtime.prepare_process(settings.process.threads, settings.process.gpus, index)
    # SIGALRM and ITIMER_REAL are the server's own here: predictor time limits keep one
    # timer armed instead of arming one per call
    deadline.keep_timer_armed()
    # a model that does not load at the server's start stops the server
    startup.stop_with(stop_starting_server)


STARTED = "started"
"""A file in the shared state folder once a worker has passed the start-up rule: from then
on a worker (a respawned one) that cannot load a model goes on with the others."""
START_FAILED = "start-failed"
"""Created by the one worker that logs why the server does not start."""
WORKER_BOOT_ERROR = 3
"""The exit status with which gunicorn's master halts the server ("Worker failed to boot")
instead of starting another worker."""


def stop_starting_server(error: startup.StartFailed) -> None:
    """The start-up rule's stop in a worker (:func:`flask_predict.models.startup.stop`): the first
    worker to get here logs the error's line and exits with the status that halts gunicorn,
    which stops the others (they wait, not ready, saying nothing: one line for the server).
    After the server has started (a respawned worker), what did not load is logged and the
    worker serves the others."""
    folder = os.environ.get(STATE_DIR_VARIABLE)
    log = logging.getLogger(__name__)
    if folder and os.path.exists(os.path.join(folder, STARTED)):
        log.error("flask_predict: %s; this worker serves the others, as the server does",
                  "; ".join(map(str, error.failures)))
        return
    if folder and not _claim(os.path.join(folder, START_FAILED)):
        return  # another worker said it and is halting the server
    log.error("%s", error.message)
    for handler in logging.getLogger("flask_predict").handlers:
        handler.flush()
    os._exit(WORKER_BOOT_ERROR)


def _claim(path: str) -> bool:
    """Create *path*; ``False`` when another process did first."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def mark_started() -> None:
    """This worker passed the start-up rule: the server has started."""
    folder = os.environ.get(STATE_DIR_VARIABLE)
    if folder:
        with open(os.path.join(folder, STARTED), "ab"):
            pass


def worker_loaded(app: Any, worker: Any) -> None:
    """In the worker, after the app loaded: once its models are in memory, limit the pools
    the frameworks started and freeze the heap; take part in server-wide readiness. A WSGI
    app without the extension (any other callable) is left alone."""
    state: PredictState | None = getattr(app, "extensions", {}).get(EXTENSION_KEY)
    if state is None:
        return
    threads = state.settings.process.threads
    marks = ready_marks()
    pid = os.getpid()
    control = state.service.control
    if marks is not None:
        state.service.ready_checks.append(marks.all_ready)
    control.after_first_load(mark_started)  # after the start-up rule, which init_app added
    control.after_first_load(lambda: runtime.settle_process(threads))
    if marks is not None:
        control.after_each_poll(lambda: marks.mark(pid, control.loaded))


def hold_until_serving(app: Any, worker: Any) -> None:
    """In a worker about to accept connections: while its models first load and another
    worker of the server is ready, accept none (they wait in the listen queue for a worker
    that serves them), beating so the master never times it out, and honouring its signals.
    At the server's start, when no worker is ready yet, it accepts at once: liveness answers
    and a request waits for the load (``PREDICT_LOAD_WAIT_SECONDS``); the start of a binary
    upgrade's new server counts the old server's ready workers as others."""
    state: PredictState | None = getattr(app, "extensions", {}).get(EXTENSION_KEY)
    marks = ready_marks()
    if state is None or marks is None:
        return
    loaded = threading.Event()
    state.service.control.after_first_load(loaded.set)
    pid = os.getpid()
    # gunicorn keeps the old master's pid in GUNICORN_PID until it promotes the new master:
    # a worker forked after that has no old server to wait for, even a killed one's folder
    upgraded = os.environ.get(UPGRADED_FROM_VARIABLE) if "GUNICORN_PID" in os.environ else None

    def others_serve() -> bool:  # this server's other workers, or the one it upgrades
        return marks.any_ready(pid) or (upgraded is not None and any_marked(upgraded))

    held = time.monotonic()
    while worker.alive and not loaded.wait(HOLD_STEP_SECONDS) and others_serve():
        worker.notify()
        if os.getppid() != worker.ppid:  # the master is gone
            return
    if time.monotonic() - held > 2 * HOLD_STEP_SECONDS:
        logging.getLogger(__name__).info(
            "flask_predict: worker %s accepts connections after %.1fs of loading (the other "
            "workers served them meanwhile)", pid, time.monotonic() - held)


HOLD_STEP_SECONDS = 0.1


def _exit_now(number: int, frame: Any) -> None:
    os._exit(0)


def honour_early_stop(arbiter: Any) -> None:
    """In a worker just forked, before gunicorn sets up its signals: a ``TERM``, ``INT`` or
    ``QUIT`` that arrived since the fork (queued by the master's handlers, which the child
    still has) stops it now, and one arriving until the worker's own handlers are set ends
    it at once (it holds no request yet)."""
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, _exit_now)
    pending = getattr(arbiter, "SIG_QUEUE", None)
    early = []
    while pending is not None:
        try:
            early.append(pending.get_nowait())
        except Exception:  # queue.Empty
            break
    if any(sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT) for sig in early):
        os._exit(0)


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
    from ..observability.metrics import prepare_directory

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


def start_grpc(app: Any) -> Any:
    """Serve gRPC from this process for *app*'s models when ``PREDICT_GRPC_PORT`` is set.

    Gunicorn's ``post_worker_init`` calls it in every worker; an app embedded in one
    process may call it itself. Returns the :class:`flask_predict.grpc.server.GrpcServer`
    (``None`` without a port, or for a WSGI app without the extension); :func:`stop_grpc`
    stops it.
    """
    state: PredictState | None = getattr(app, "extensions", {}).get(EXTENSION_KEY)
    if state is None or state.settings.grpc.port is None:
        return None
    check_grpc_installed()
    from ..grpc.server import GrpcServer  # imported after the fork: grpc is not fork-safe

    server = GrpcServer(state)
    server.start()
    state.extras[GRPC_SERVER_KEY] = server
    return server


def stop_grpc(app: Any, grace: float | None = None) -> None:
    """Stop the gRPC server :func:`start_grpc` started, letting calls in flight finish."""
    state = getattr(app, "extensions", {}).get(EXTENSION_KEY)
    server = state.extras.pop(GRPC_SERVER_KEY, None) if state is not None else None
    if server is not None:
        server.stop(grace)


def request_done(environ: dict[str, Any]) -> None:
    """After each request: return memory to the system if it was a large one."""
    release(environ)


def close_worker(app: Any) -> None:
    """Stop serving gRPC, then release the worker's models (a WSGI app without the
    extension has none)."""
    if EXTENSION_KEY not in getattr(app, "extensions", {}):
        return
    logging.getLogger(__name__).info("flask_predict: worker %s releasing its models",
                                     os.getpid())
    stop_grpc(app)
    close_app(app)
