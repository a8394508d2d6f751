"""What metrics, the access log and the gRPC server cost: one-row throughput with them on
and off.

The same server three times, ``gunicorn -c gunicorn.conf.py wsgi:app`` with 2 workers
serving ``benchmarks/run.py``'s 20-feature LogisticRegression, each answering HTTP only:

* ``observed + gRPC``: as ``run.py`` starts it, the ``observed`` server with the gRPC
  server on as well (``FLASK_PREDICT_GRPC_PORT``: each worker runs its own, idle here);
* ``observed``: the standalone defaults, Prometheus metrics recorded (multiprocess files)
  and one text access-log line per request written to the server's log;
* ``unobserved``: ``FLASK_PREDICT_METRICS=false`` and ``FLASK_PREDICT_ACCESS_LOG=false``;
* ``flask-floor``: the cheapest Flask view (``floors.py``) on the same gunicorn, for what the
  product costs a request over any Flask app, with and without what it observes.

All take turns in every round (see ``harness.run_rounds``); the ratio observed/unobserved
of the medians is the figure to read (target: at least 0.95).

    .venv/bin/python benchmarks/observability.py [--rounds 5] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floors  # noqa: E402
import harness  # noqa: E402
import models  # noqa: E402
import run  # noqa: E402
from harness import Scenario, Server  # noqa: E402

FLOOR = "flask-floor"
"""The cheapest Flask view on the same gunicorn: what a request costs any Flask app."""
ROUTES = {"AI Platform": "/v1/projects/bench/models/{model}:predict",
          "TF Serving": "/v1/models/{model}:predict"}


def servers(models: Path, route: str) -> list[Server]:
    config = json.dumps({"lr": {"base_path": str(models / "lr")}})
    common = {"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
              "FLASK_PREDICT_MODELS": config}
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
    return [
        Server("observed + gRPC", command, path=route, cwd=run.ROOT,
               env={**common, "FLASK_PREDICT_GRPC_PORT": str(harness.free_port())},
               ready_path="/v2/health/ready", ready_status=200, check=run.check_rows),
        Server("observed", command, path=route, cwd=run.ROOT, env=common,
               ready_path="/v2/health/ready", ready_status=200, check=run.check_rows),
        Server("unobserved", command, path=route, cwd=run.ROOT,
               env={**common, "FLASK_PREDICT_METRICS": "false",
                    "FLASK_PREDICT_ACCESS_LOG": "false"},
               ready_path="/v2/health/ready", ready_status=200, check=run.check_rows),
        Server(FLOOR, floors.gunicorn_command("flask_app"), path="/"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--route", choices=sorted(ROUTES), default="AI Platform")
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args()

    harness.require_wrk()
    with tempfile.TemporaryDirectory(prefix="flask-predict-bench-") as tmp:
        work = Path(tmp)
        models.train(work / "models")
        body = work / "body-1.json"
        body.write_bytes(models.instances(models.rows(1)))
        scenario = Scenario(f"lr 1 row, {args.route}", "lr", body, connections=16, rows=1)
        footprints: dict[str, harness.Footprint] = {}
        results = harness.run_rounds(servers(work / "models", ROUTES[args.route]),
                                     [scenario], args.rounds, args.seconds, log_dir=work,
                                     footprints=footprints)
    report = "\n\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, {args.rounds} "
        f"rounds of {args.seconds:g} s, medians; 16 connections, 2 workers per server.",
        "Requests/s:\n\n" + harness.ratio_table(results, "unobserved"),
        "Requests per CPU second of the server's processes:\n\n"
        + harness.ratio_table(results, "unobserved", metric="requests_per_cpu_s"),
        "Requests per CPU second against the Flask floor view (the product's own cost per "
        "request, with and without what it observes):\n\n"
        + harness.ratio_table(results, FLOOR, metric="requests_per_cpu_s"),
        "Start-up and memory (summed RSS of the master and both workers):\n\n"
        + run.footprint_table(footprints, "unobserved"),
        "Per round:\n\n" + harness.raw_table(results),
    ])
    print("\n" + report)
    if not args.no_readme:
        harness.update_readme("observability", report)


if __name__ == "__main__":
    main()
