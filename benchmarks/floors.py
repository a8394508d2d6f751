"""The two floors every protocol benchmark compares against, served by gunicorn:

* ``bare``: a plain WSGI callable that drains the request body and returns a constant;
  the most any WSGI server process on this machine can answer.
* ``flask_app``: the cheapest Flask view doing the same; Flask's own per-request cost.

``gunicorn -w 2 -k flask_predict.process.sync_worker.SyncWorker --chdir benchmarks floors:bare`` (or
``floors:flask_app``): the worker class flask-predict's own settings name, so a floor is the
same gunicorn as the server it bounds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from flask import Flask, Response, request

ANSWER = b'{"predictions":[0]}'
WORKER_CLASS = "flask_predict.process.sync_worker.SyncWorker"


def bare(environ: dict[str, Any],
         start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Read the whole body, answer a constant JSON document."""
    length = environ.get("CONTENT_LENGTH")
    environ["wsgi.input"].read(int(length) if length else None)  # one call, as Werkzeug's
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]


flask_app = Flask(__name__)


@flask_app.post("/", defaults={"path": ""})
@flask_app.post("/<path:path>")
def drain(path: str) -> Response:
    """Read the whole body, answer a constant JSON document."""
    request.get_data()
    return Response(ANSWER, mimetype="application/json")


@flask_app.get("/", defaults={"path": ""})
@flask_app.get("/<path:path>")
def ready(path: str) -> Response:
    return Response(b"{}", mimetype="application/json")


def gunicorn_command(app: str, workers: int = 2) -> list[str]:
    """The command line that serves ``floors:<app>`` on ``127.0.0.1:{port}``."""
    return [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--worker-class",
            WORKER_CLASS, "--bind", "127.0.0.1:{port}", "--chdir", str(Path(__file__).parent),
            f"floors:{app}"]
