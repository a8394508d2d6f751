"""Gunicorn settings for the deployment app, loadable from anywhere:
``gunicorn -c python:flask_predict.gunicorn_config flask_predict.wsgi:app``. Every sync worker
imports the app itself; the models every worker can share (scikit-learn, XGBoost) are loaded
once, in the master, and inherited through the fork (``when_ready``); each worker loads the
others (TensorFlow) itself. Hooks only log or delegate
(to :mod:`flask_predict.process.server`); model logic lives in flask_predict.

Environment: ``PORT`` (else Vertex AI's ``AIP_HTTP_PORT``, else TF Serving's 8501, as for
``flask-predict serve``), ``HOST`` (0.0.0.0), ``WEB_CONCURRENCY`` (workers, default 2),
``GUNICORN_TIMEOUT`` (60 s), ``LOG_LEVEL`` (INFO). ``FLASK_PREDICT_*`` variables configure
the models. Options on gunicorn's command line
(``--bind``, ``--workers``) win over these, as always with gunicorn.
"""

from __future__ import annotations

import os
from typing import Any

from .cli.serve import rest_port_value
from .process import master, server, server_logs, worker_hooks

__all__ = ["bind", "workers", "worker_class", "preload_app", "timeout", "graceful_timeout",
           "worker_tmp_dir", "keepalive", "control_socket_disable", "logger_class",
           "on_starting", "pre_exec", "when_ready", "pre_fork", "post_fork", "post_worker_init",
           "child_exit", "post_request", "worker_exit", "on_exit", "nworkers_changed",
           "on_reload"]

#   bind - all interfaces on $PORT (else Vertex AI's $AIP_HTTP_PORT, else 8501: one default
#       port for these settings, `flask-predict serve`, the container and `make serve`).
_port = rest_port_value(os.environ)
bind = f"{os.environ.get('HOST', '0.0.0.0')}:{_port}"
#   workers - each is one process with its own models; requests run one at a time in each.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
#   worker_class - gunicorn's sync worker, closing a connection as soon as its request,
#       read whole, is answered, instead of waiting for the client to close first
#       (flask_predict.process.sync_worker); ``-k sync`` is gunicorn's own.
worker_class = "flask_predict.process.sync_worker.SyncWorker"
#   preload_app - False: the app (and TensorFlow, which hangs in a forked child once the
#       parent has imported it) loads in each worker after the fork. The shareable models
#       load in the master all the same (when_ready, flask_predict.models.sharing), with every
#       native pool at one thread there, so no OpenMP pool reaches a worker.
preload_app = False
#   timeout - the longest single request a sync worker may take (the master kills a worker
#       silent for longer); predictor calls stop at 80% of it with the protocol's timeout
#       error (flask_predict.runtime.deadline). Models load in the background while the worker beats.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
#   worker_tmp_dir - each worker's heartbeat is a chmod of a file here before every request:
#       in memory (/dev/shm) rather than on the disk of /tmp, as gunicorn's docs advise.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
    else None
#   keepalive - not used by sync workers, which close every connection after one answer;
#       the nginx front keeps clients' connections open (docs/deployment.md).
keepalive = 2
#   control_socket_disable - gunicorn >= 24 opens one control socket per user by default;
#       several servers on one host (or one per model set) would fight over it.
control_socket_disable = True
#   logger_class - gunicorn's logger, its lines in PREDICT_LOG_FORMAT (JSON: every line of
#       the master and the workers is one JSON object).
logger_class = "flask_predict.process.server_logs.ServerLogger"


# gRPC (FLASK_PREDICT_GRPC_PORT) runs in each worker, started after the fork.
server.keep_grpc_fork_support_off()


def on_starting(server_: Any) -> None:
    """In the master, before any worker: size each worker's thread pools to its share of
    the cores (from the worker count in force, ``--workers`` included), bound predictor calls
    below the worker timeout in force, give the workers one folder for server-wide state
    (grps online/offline) and one for prometheus_client's multiprocess metrics
    (``PROMETHEUS_MULTIPROC_DIR``, emptied now), and check the configuration, so a mistake
    stops the server at boot. A binary upgrade (``USR2``) re-runs ``-m gunicorn`` as it was
    started, never gunicorn's ``__main__.py`` as a script."""
    server.keep_upgrades_importable(server_)
    server.share_cores(server_.cfg.workers)
    server.share_timeout(server_.cfg.timeout)
    server.share_state_dir()
    server.server_starting(server_)


def pre_exec(server_: Any) -> None:
    # a binary upgrade's new master (USR2): its workers take no connection while they load
    # and the old server's ready workers serve
    server.hand_over(server_)


def when_ready(server_: Any) -> None:
    # listening; before the first worker: the master keeps the worker count the operator
    # asks for (TTIN, TTOU, HUP, rollouts); the versions every worker can share
    # (scikit-learn, XGBoost) load once, here, and are watched from a thread of the master;
    # then one line saying what serves where (REST, gRPC, status page, metrics)
    master.start(server_)
    server_logs.announce(server_)


def nworkers_changed(server_: Any, new_value: int | None, old_value: int | None) -> None:
    # TTIN, TTOU or a reload changed the worker count: the master's worker pool keeps the
    # operator's count apart from a rollout's extra worker
    master.workers_changed(new_value, old_value)


def on_reload(server_: Any) -> None:
    # HUP: the configured count again, and the end of any rollout step in progress
    master.reloaded()


def pre_fork(server_: Any, worker: Any) -> None:
    # the lowest free index: a respawned worker takes its dead predecessor's GPU; the
    # shared versions it inherits are noted, so that each is closed once no worker holds it
    server.assign_worker_index(server_, worker)
    master.forking(worker)


def post_fork(server_: Any, worker: Any) -> None:
    # a TERM, INT or QUIT sent before the worker's own signal handlers are set stops it
    worker_hooks.honour_early_stop(server_)
    # flask_predict's own lines (models loaded, failed requests) go to gunicorn's error log
    # at $LOG_LEVEL. Not logconfig_dict: that would make gunicorn build every request's
    # access-log fields even with no access log.
    server_logs.route_logs(worker.log.error_log, os.environ.get("LOG_LEVEL", "INFO"))
    # thread pools and GPU of this worker, before it imports any framework
    worker_hooks.worker_started(worker)


def post_worker_init(worker: Any) -> None:
    # models load in the background: readiness once they are in. A worker that another
    # ready worker covers accepts nothing until its models are in (it beats meanwhile);
    # at the server's start every worker accepts at once and liveness answers.
    worker_hooks.worker_loaded(worker.wsgi, worker)
    worker_hooks.hold_until_serving(worker.wsgi, worker)
    worker.log.info("flask_predict: worker %s serving", worker.pid)
    # every worker serves gRPC for its own models on the one shared port (SO_REUSEPORT)
    worker_hooks.start_grpc(worker.wsgi)


def child_exit(server_: Any, worker: Any) -> None:
    # in the master, for every worker that exited or was killed: no longer ready; its
    # metrics counters stay in the totals, its live gauges (in flight, loaded) are dropped;
    # a dropped shared version no live worker holds is closed
    master.worker_gone(server_, worker)


def on_exit(server_: Any) -> None:
    # in the master, every worker gone: close every version the master loaded
    master.stopped(server_)


def post_request(worker: Any, req: Any, environ: dict[str, Any], resp: Any) -> None:
    # after a large request, give the freed heap back to the system (glibc malloc_trim)
    worker_hooks.request_done(environ)


def worker_exit(server_: Any, worker: Any) -> None:
    # gunicorn may call this in the master for a dead worker: act only if this process
    # really loaded the app.
    app = getattr(worker, "wsgi", None)
    if app is not None:
        worker_hooks.close_worker(app)
