"""What an explanation costs against a prediction of the same rows: the AI Platform route's
``:explain`` and ``:predict`` on the benchmark's two models (``lr``, ``xgb``), in one
process, through the app's WSGI callable (Flask's test client), on one thread
(``OMP_NUM_THREADS=1``, a worker's share of a machine with a core per worker), each size
timed in turn and reported as a ratio of medians.

    .venv/bin/python benchmarks/explain_cost.py [--calls 300] [--sizes 1 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

ROUTE = "/v1/projects/bench/models/{}:{}"


def median_seconds(client: object, path: str, body: bytes, calls: int) -> float:
    """The median time of one request of *body* to *path*, after a few to warm up."""
    post = getattr(client, "post")
    for _ in range(5):
        assert post(path, data=body, content_type="application/json").status_code == 200
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        post(path, data=body, content_type="application/json")
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 100])
    args = parser.parse_args()
    # one thread per model, as a gunicorn worker gets on a machine of one core per worker
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from flask import Flask

    from flask_predict import FlaskPredict

    with tempfile.TemporaryDirectory(prefix="flask-predict-explain-") as tmp:
        root = models.train(Path(tmp) / "models")
        app = Flask("bench")
        app.config.update(PREDICT_POLL_SECONDS=0, PREDICT_MODELS={
            name: {"base_path": str(root / name)} for name in ("lr", "xgb")})
        FlaskPredict(app)
        client = app.test_client()
        print("| model | rows | predict, ms | explain, ms | explain / predict |")
        print("|---|---|---|---|---|")
        for name in ("lr", "xgb"):
            for size in args.sizes:
                body = models.instances(models.rows(size))
                predict = median_seconds(client, ROUTE.format(name, "predict"), body,
                                         args.calls)
                explain = median_seconds(client, ROUTE.format(name, "explain"), body,
                                         args.calls)
                print(f"| {name} | {size} | {predict * 1e3:.2f} | {explain * 1e3:.2f} | "
                      f"{explain / predict:.1f} |")


if __name__ == "__main__":
    main()
