"""Where a small request's CPU time goes, in one process: each route against the Flask floor.

Builds the app as ``wsgi.py`` does, with the benchmark's ``lr`` and ``xgb`` models, and calls
its WSGI callable directly (no sockets, no server) with one body per route, many times:

* the CPU time of one request per route and model, and what it adds over the cheapest Flask
  view (``floors.flask_app``) fed the same body;
* with ``--profile ROUTE``, cProfile's top functions by own time for that route.

CPU time of this thread, the best of 5 batches: other load on the machine moves it far less
than wall time. Under gunicorn, add its own work per request (accept, parse, send, close):
compare ``floors.bare`` in ``run.py``'s tables.

    .venv/bin/python benchmarks/profile_requests.py [--rows 1] [--profile "AI Platform"]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import floors  # noqa: E402
import models  # noqa: E402
from run import ROUTES  # noqa: E402

Call = Callable[[], None]


def wsgi_call(app: Any, path: str, body: bytes) -> Call:
    """One POST of *body* to *path* through *app*'s WSGI callable, answer read and closed."""
    query = ""
    if "?" in path:
        path, query = path.split("?", 1)
    template = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": query,
                "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8080", "SERVER_PROTOCOL": "HTTP/1.1",
                "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
                "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "wsgi.multithread": False,
                "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0),
                "HTTP_HOST": "127.0.0.1:8080"}
    status: list[str] = []

    def start_response(code: str, headers: Any, exc_info: Any = None) -> None:
        status.append(code)

    def call() -> None:
        environ = dict(template, **{"wsgi.input": io.BytesIO(body)})
        answer = app(environ, start_response)
        try:
            for _ in answer:
                pass
        finally:
            getattr(answer, "close", lambda: None)()
        if not status.pop().startswith("200"):
            raise RuntimeError(f"{path}: {status}")
    return call


def cpu_us(call: Call, calls: int) -> float:
    call()
    best = []
    for _ in range(5):
        start = time.thread_time()
        for _ in range(calls // 5):
            call()
        best.append((time.thread_time() - start) / (calls // 5) * 1e6)
    return min(best)


def make_app(models_dir: Path) -> Any:
    """The deployment app, its background threads quiet: models loaded once (no polling),
    metrics flushed once a minute. A thread waiting for the GIL makes every call of a loop
    that releases it cost a wake-up (README, "Inside a loaded worker"); a gunicorn worker,
    which blocks on its sockets, does not pay that."""
    config = {name: {"base_path": str(models_dir / name)} for name in ("lr", "xgb")}
    os.environ["FLASK_PREDICT_MODELS"] = json.dumps(config)
    os.environ["FLASK_PREDICT_THREADS"] = "1"  # a gunicorn worker's share of 2 cores
    os.environ["FLASK_PREDICT_POLL_SECONDS"] = "0"
    from flask_predict.observability import metrics

    metrics.FLUSH_SECONDS = 60.0
    import wsgi

    return wsgi.app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--profile", choices=list(ROUTES), help="cProfile this route")
    parser.add_argument("--model", default="lr", choices=("lr", "xgb"))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flask-predict-profile-") as tmp:
        app = make_app(models.train(Path(tmp) / "models"))
        values = models.rows(args.rows)
        bodies = {name: writer(values) for name, writer in models.BODIES.items()}
        floor = cpu_us(wsgi_call(floors.flask_app, "/", bodies["instances"]), args.calls)
        print(f"flask floor view: {floor:.1f} us of CPU per request ({args.rows} row(s))")
        print("| route | model | us per request | over the floor |\n|---|---|---|---|")
        for route, (path, body) in ROUTES.items():
            for model in ("lr", "xgb"):
                call = wsgi_call(app, path.replace("{model}", model), bodies[body])
                spent = cpu_us(call, args.calls)
                print(f"| {route} | {model} | {spent:.1f} | {spent - floor:+.1f} |")
        if args.profile:
            path, body = ROUTES[args.profile]
            call = wsgi_call(app, path.replace("{model}", args.model), bodies[body])
            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()
            for _ in range(args.calls):
                call()
            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
