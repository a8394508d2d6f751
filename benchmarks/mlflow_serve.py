"""/invocations against ``mlflow models serve`` on the same MLflow model folder.

The benchmark's 20-feature LogisticRegression (``models.py``), saved by
``mlflow.sklearn.save_model`` (pickle serialization, a signature of 20 named double
columns), served by:

* flask-predict, ``gunicorn -c gunicorn.conf.py wsgi:app`` with N sync workers, its
  MLflow route ``POST /invocations``;
* ``mlflow models serve --env-manager local -w N`` (uvicorn workers, MLflow's own scoring
  server).

The same ``dataframe_split`` body (named columns) at 1 row on 1 connection, 1 row on 16, 100
rows on 16 and 10,000 rows on 2; medians as ratios against MLflow in the same run. Then the
memory of each with 4 workers: the PSS of every process of the server, summed, once each
worker has answered.

    .venv/bin/python benchmarks/mlflow_serve.py [--rounds 3] [--seconds 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import models  # noqa: E402
from memory_shared import group_memory  # noqa: E402

ROOT = HERE.parent
COLUMNS = [f"f{i}" for i in range(models.FEATURES)]
SIZES = (("1 row, 1 conn", 1, 1), ("1 row, 16 conns", 1, 16), ("100 rows, 16 conns", 100, 16),
         ("10000 rows, 2 conns", 10_000, 2))


def save(folder: Path) -> Path:
    """The LogisticRegression as ``mlflow.sklearn.save_model`` writes it into *folder*."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    x, y = models.training_data()
    frame = pd.DataFrame(x, columns=COLUMNS)
    model = LogisticRegression(max_iter=1000).fit(frame, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mlflow.sklearn
        from mlflow.models import infer_signature

        mlflow.sklearn.save_model(model, str(folder), serialization_format="pickle",
                                  signature=infer_signature(frame, model.predict(frame)))
    return folder


def body(count: int) -> bytes:
    values = models.rows(count)
    return json.dumps({"dataframe_split": {"columns": COLUMNS, "data": [
        [round(float(v), 6) for v in row] for row in values]}}).encode()


def ours(base: Path, workers: int) -> harness.Server:
    return harness.Server(
        "flask-predict", [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                          "--bind", "127.0.0.1:{port}", "--workers", str(workers), "wsgi:app"],
        path="/invocations", cwd=ROOT, ready_path="/ping", ready_status=200,
        env={"FLASK_PREDICT_MODELS": json.dumps({"lr": {"base_path": str(base)}}),
             "WEB_CONCURRENCY": str(workers)})


def mlflow(folder: Path, workers: int) -> harness.Server:
    bin_dir = str(Path(sys.executable).parent)  # mlflow starts uvicorn by name
    return harness.Server(
        "mlflow", [sys.executable, "-m", "mlflow", "models", "serve", "-m", str(folder),
                   "--env-manager", "local", "-h", "127.0.0.1", "-p", "{port}",
                   "-w", str(workers)],
        path="/invocations", ready_path="/ping", ready_status=200,
        env={"PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")})


def same_answers(servers: list[harness.Server], work: Path) -> None:
    """Both answer the 100-row body with the same predictions."""
    answers = []
    for server in servers:
        with harness.started(server, log_dir=work) as running:
            status, answer = harness.post(running.port, "/invocations", body(100))
            assert status == 200, answer[:300]
            answers.append(json.loads(answer)["predictions"])
    assert answers[0] == answers[1], "the two servers answer differently"


def memory(server: harness.Server, work: Path, workers: int) -> float:
    """The PSS of all the server's processes once *workers* x 4 requests were answered."""
    with harness.started(server, log_dir=work) as running:
        for _ in range(workers * 4):
            harness.post(running.port, "/invocations", body(1))
        time.sleep(1)
        return group_memory(running.group)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    harness.require_wrk()
    work = Path(tempfile.mkdtemp(prefix="mlflow-bench-"))
    folder = save(work / "lr" / "1")
    servers = [ours(folder.parent, args.workers), mlflow(folder, args.workers)]
    same_answers(servers, work)
    bodies = work / "bodies"
    bodies.mkdir()
    scenarios = []
    for name, count, connections in SIZES:
        path = bodies / f"{count}.json"
        path.write_bytes(body(count))
        scenarios.append(harness.Scenario(name, "lr", path, connections, count))
    results = harness.run_rounds(servers, scenarios, args.rounds, args.seconds, work)
    print(f"\nload average {harness.load_average()}, {args.workers} workers each, "
          f"{args.rounds} rounds of {args.seconds:g} s\n")
    print(harness.ratio_table(results, "mlflow", ["mlflow", "flask-predict"]))
    print()
    print(harness.ratio_table(results, "mlflow", ["mlflow", "flask-predict"],
                              "requests_per_cpu_s"))
    pss = {server.name: memory(server, work, 4) for server in
           (ours(folder.parent, 4), mlflow(folder, 4))}
    print(f"\nPSS with 4 workers: mlflow {pss['mlflow']:.0f} MiB, flask-predict "
          f"{pss['flask-predict']:.0f} MiB ({pss['flask-predict'] / pss['mlflow']:.2f}x)")


if __name__ == "__main__":
    main()
