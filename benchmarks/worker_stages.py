"""Where a one-row request's time goes inside a loaded gunicorn worker, stage by stage.

A hot loop in one process (``profile_requests.py``) keeps every cache warm; a worker under
``wrk`` does not, so each stage costs there two to three times what it costs in a loop. This
starts the packaged server (``gunicorn -c gunicorn.conf.py``, 2 workers, the 20-feature
``lr`` model) on an app that wraps each stage with a timer: gunicorn's (parsing, the
environ, the app), Flask's (request context, URL matching, hooks, dispatch, response) and
the AI Platform view's (body, parsing, service call, model, answer). It adds a ``/floor``
route, the cheapest Flask view, to the same app. ``wrk`` loads the route and the floor in
turn; each worker writes its sums when it exits, and the table gives microseconds a request
per stage for both.

    .venv/bin/python benchmarks/worker_stages.py [--seconds 5] [--rounds 2] [--observed]
        [--clock cpu|wall]

Stages nest (the app holds Flask's steps, the view its own), and a timer costs about
0.1 us (wall) or 0.5 us (thread CPU time) a stage. gunicorn's stages are counted on the
route of the request before (a worker's first accept has no route yet). As a module
(``worker_stages:app``, what the script serves) it reads ``STAGES_DIR`` and
``STAGES_CLOCK`` from the environment.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROUTE = "/v1/projects/bench/models/lr:predict"
FLOOR = "/floor"
ANSWER = b'{"predictions":[0]}'
APP = "  app: Flask and the view"
VIEW = "    the view"
STAGES = [  # (what holds it, its name, the stage), in the table's order; nested by indent
    ("gunicorn_sync.SyncWorker", "handle", "gunicorn: one connection, app included"),
    ("gunicorn_parser.Parser", "__next__", "  gunicorn: parse the request"),
    ("gunicorn_wsgi", "create", "  gunicorn: build the environ"),
    ("", "", APP),
    ("Flask", "request_context", "    Flask: request context (Request, URL adapter)"),
    ("ctx.RequestContext", "match_request", "    Flask: URL matching"),
    ("Flask", "preprocess_request", "    Flask: before-request hooks"),
    ("observe.Observer", "before", "      our before hook"),
    ("", "", VIEW),
    ("ml", "holding_version", "      view: hold the version"),
    ("ml", "read_body", "      view: read the body"),
    ("instances", "number_matrix", "      view: parse the body"),
    ("ModelService", "call", "      view: service call"),
    ("deadline.limit", "__enter__", "        time limit, enter"),
    ("predictor.Predictor", "predict_matrix", "        predictor"),
    ("SklearnPredictor", "predict_tensors", "          the model"),
    ("deadline.limit", "__exit__", "        time limit, exit"),
    ("ml", "json_response", "      view: answer"),
    ("Flask", "finalize_request", "    Flask: after-request hooks and response"),
    ("metrics.Metrics", "finished", "      our metrics"),
    ("access_log.AccessLog", "write", "      our access line"),
    ("ctx.RequestContext", "pop", "    Flask: teardown"),
    ("sync_worker.OneWriteResponse", "write", "  gunicorn: write the answer"),
    ("sync_worker", "close_read_connection", "  gunicorn: close"),
]


# --- inside the workers ---------------------------------------------------------------------

def _instrumented_app() -> Any:
    """The deployment app, its stages wrapped with timers, and the ``/floor`` route."""
    from flask import Flask, Response, request
    from flask import ctx
    from gunicorn.http import parser as gunicorn_parser, wsgi as gunicorn_wsgi
    from gunicorn.workers import sync as gunicorn_sync

    import flask_predict.observability.access_log as access_log
    import flask_predict.observability.metrics as metrics
    import flask_predict.web.observe as observe
    import flask_predict.predictor as predictor
    import flask_predict.protocols.aiplatform.instances as instances
    import flask_predict.process.sync_worker as sync_worker
    import flask_predict.protocols.aiplatform.ml as ml
    from flask_predict.runtime import deadline
    from flask_predict.core.service import ModelService
    from flask_predict.wsgi import app
    from flask_predict_sklearn.predictor import SklearnPredictor

    clock = time.thread_time_ns if os.environ.get("STAGES_CLOCK") == "cpu" \
        else time.perf_counter_ns
    spent: defaultdict[str, int] = defaultdict(int)
    counts: defaultdict[str, int] = defaultdict(int)
    route = ["-"]

    def timed(stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = clock()
            try:
                return function(*args, **kwargs)
            finally:
                key = f"{route[0]}\t{stage}"
                spent[key] += clock() - began
                counts[key] += 1
        return wrapper

    def dump() -> None:
        out = Path(os.environ["STAGES_DIR"]) / f"{os.getpid()}.json"
        out.write_text(json.dumps({key: [spent[key], counts[key]] for key in spent}))

    atexit.register(dump)

    @app.post(FLOOR)
    def floor() -> Response:
        request.get_data()
        return Response(ANSWER, mimetype="application/json")

    inner = app.wsgi_app

    def wsgi_app(environ: dict[str, Any], start_response: Any) -> Any:
        route[0] = "floor" if environ["PATH_INFO"] == FLOOR else "route"
        return timed(APP, inner)(environ, start_response)

    app.wsgi_app = wsgi_app  # type: ignore[method-assign]
    for endpoint, view in list(app.view_functions.items()):
        if endpoint in ("predict_aiplatform.predict", "floor"):
            app.view_functions[endpoint] = timed(VIEW, view)
    owners = {"gunicorn_sync.SyncWorker": gunicorn_sync.SyncWorker,
              "gunicorn_parser.Parser": gunicorn_parser.Parser, "gunicorn_wsgi": gunicorn_wsgi,
              "sync_worker": sync_worker,
              "sync_worker.OneWriteResponse": sync_worker.OneWriteResponse, "Flask": Flask,
              "ctx.RequestContext": ctx.RequestContext, "observe.Observer": observe.Observer,
              "metrics.Metrics": metrics.Metrics, "access_log.AccessLog": access_log.AccessLog,
              "ml": ml, "instances": instances, "ModelService": ModelService,
              "deadline.limit": deadline.limit, "predictor.Predictor": predictor.Predictor,
              "SklearnPredictor": SklearnPredictor}
    for owner_name, name, stage in STAGES:
        if owner_name:
            owner = owners[owner_name]
            setattr(owner, name, timed(stage, getattr(owner, name)))
    return app


if os.environ.get("STAGES_DIR"):
    app = _instrumented_app()


# --- the script -----------------------------------------------------------------------------

def table(folder: Path) -> str:
    """Microseconds a request per stage, summed over the workers' files."""
    spent: defaultdict[tuple[str, str], int] = defaultdict(int)
    counts: defaultdict[tuple[str, str], int] = defaultdict(int)
    for path in sorted(folder.glob("*.json")):
        for key, (ns, count) in json.loads(path.read_text()).items():
            route, stage = key.split("\t")
            spent[route, stage] += ns
            counts[route, stage] += count
    rows = ["| stage | floor view (us) | AI Platform `lr` (us) |", "|---|---|---|"]
    for _, _, stage in STAGES:
        cells = [f"{spent[route, stage] / counts[route, stage] / 1000:.1f}"
                 if counts[route, stage] > 100 else "-" for route in ("floor", "route")]
        depth = (len(stage) - len(stage.lstrip())) // 2
        rows.append(f"| {'. ' * depth}{stage.strip()} | {cells[0]} | {cells[1]} |")
    return "\n".join(rows)


def main() -> None:
    sys.path.insert(0, str(HERE))
    import harness
    import models
    import run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--observed", action="store_true",
                        help="metrics and the access log on (the standalone defaults)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    harness.require_wrk()
    with tempfile.TemporaryDirectory(prefix="flask-predict-stages-") as tmp:
        work = Path(tmp)
        trained = models.train(work / "models")
        body = work / "body.json"
        body.write_bytes(models.instances(models.rows(1)))
        (work / "stages").mkdir()
        env = {"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
               "FLASK_PREDICT_MODELS": json.dumps({"lr": {"base_path": str(trained / "lr")}}),
               "PYTHONPATH": str(HERE), "STAGES_DIR": str(work / "stages"),
               "STAGES_CLOCK": args.clock}
        if not args.observed:
            env.update(FLASK_PREDICT_METRICS="false", FLASK_PREDICT_ACCESS_LOG="false")
        server = harness.Server(
            "stages", [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                       "worker_stages:app"],
            path=ROUTE, env=env, cwd=run.ROOT, ready_path="/v2/health/ready",
            ready_status=200)
        with harness.started(server, log_dir=work) as running:
            for round_ in range(1, args.rounds + 1):
                for path in (ROUTE, FLOOR):
                    rate = harness.run_wrk(f"http://127.0.0.1:{running.port}{path}", body,
                                           args.connections, args.seconds)[0]
                    print(f"  round {round_} {path:<40} {rate:9.1f} req/s", flush=True)
        print(f"\n{args.clock} time, {args.connections} connections, metrics and access log "
              f"{'on' if args.observed else 'off'}:\n\n{table(work / 'stages')}")


if __name__ == "__main__":
    main()
