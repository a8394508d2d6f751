"""The worker's side of a deployment: what the gunicorn settings' worker hooks
(:mod:`flask_predict.gunicorn_config`) delegate to, in each worker: process-wide setup
(thread pools, GPU, ``gc.freeze``; see :mod:`.runtime`), the start-up rule's stop, holding
connections while it loads, gRPC, release at exit. The master's side is :mod:`.server`.
Nothing here runs when the extension is embedded in another app.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from ..runtime import deadline, resources as runtime
from ..models import startup
from ..runtime.memory import release
from ..core.state import EXTENSION_KEY, PredictState
from ..extension import close_app
from . import server_settings
from .readiness import any_marked
from .server import (GRPC_SERVER_KEY, INDEX_ATTRIBUTE, START_FAILED, STARTED,
                     STATE_DIR_VARIABLE, UPGRADED_FROM_VARIABLE, WORKER_BOOT_ERROR,
                     WORKER_INDEX_VARIABLE, check_grpc_installed, ready_marks)


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
