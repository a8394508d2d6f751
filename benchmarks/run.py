"""Issue 2's speed benchmark: the AI Platform route against two floors and KServe.

Trains a 20-feature LogisticRegression and a 100-tree XGBoost model into a temporary folder
and sends ``{"instances": [...]}`` bodies of 1, 100 and 10,000 rows (about 2 MB) at 16
connections to four servers, each with 2 worker processes on 127.0.0.1:

* ``flask-predict``: ``gunicorn -c gunicorn.conf.py wsgi:app``;
* ``bare-wsgi`` and ``flask-floor``: the floors in ``floors.py`` (drain the body, answer a
  constant);
* ``kserve``: KServe's Python server (``kserve_server.py``) in its own venv.

No thread environment variable is passed to any server: each sizes its own pools. The
medians of the rounds are printed and written to ``README.md`` as ratios.

    .venv/bin/python benchmarks/run.py [--rounds 3] [--seconds 5] [--no-kserve]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floors  # noqa: E402
import harness  # noqa: E402
from harness import Scenario, Server  # noqa: E402

ROOT = HERE.parent
KSERVE_VENV = HERE / ".venv-kserve"
FEATURES = 20
ROW_COUNTS = (1, 100, 10_000)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                    "FLASK_PREDICT_THREADS", "FLASK_PREDICT_WORKERS")


def train_models(root: Path) -> None:
    """``lr/1/model.joblib`` and ``xgb/1/model.json``, both on the same 20 features."""
    import joblib
    import xgboost as xgb
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    x, y = make_classification(n_samples=2000, n_features=FEATURES, random_state=0)
    (root / "lr" / "1").mkdir(parents=True)
    joblib.dump(LogisticRegression(max_iter=1000).fit(x, y), root / "lr" / "1" / "model.joblib")
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=100)
    (root / "xgb" / "1").mkdir(parents=True)
    booster.save_model(root / "xgb" / "1" / "model.json")


@contextmanager
def trained_models() -> Iterator[Path]:
    """A temporary work folder holding the trained models in ``models/``, with wrk checked
    and no thread variable left for the servers to inherit."""
    harness.require_wrk()
    for name in THREAD_VARIABLES:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="flask-predict-bench-") as tmp:
        work = Path(tmp)
        train_models(work / "models")
        yield work


def write_body(path: Path, rows: int) -> Path:
    """``{"instances": [[20 numbers], ...]}`` with 6 decimals, as a client would print."""
    values = np.random.default_rng(rows).normal(size=(rows, FEATURES))
    text = ",".join("[" + ",".join(f"{v:.6f}" for v in row) + "]" for row in values)
    path.write_text('{"instances":[' + text + "]}")
    return path


def scenarios(work: Path, row_counts: Sequence[int] = ROW_COUNTS) -> list[Scenario]:
    bodies = {rows: write_body(work / f"body-{rows}.json", rows) for rows in row_counts}
    return [Scenario(f"{model} {rows:,} row{'s' if rows > 1 else ''}", model, bodies[rows],
                     connections=16, rows=rows)
            for model in ("lr", "xgb") for rows in row_counts]


def check_predictions(scenario: Scenario, answer: bytes) -> None:
    predictions = json.loads(answer)["predictions"]
    if len(predictions) != scenario.rows:
        raise AssertionError(f"{scenario.name}: {len(predictions)} predictions for "
                             f"{scenario.rows} rows")


def ensure_kserve_venv() -> Path:
    """The KServe venv's python, created from ``requirements-kserve.txt`` if missing."""
    python = KSERVE_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {KSERVE_VENV} for KServe (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(KSERVE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r",
                        str(HERE / "requirements-kserve.txt")], check=True)
    return python


def servers(models: Path, with_kserve: bool) -> list[Server]:
    config = {name: {"base_path": str(models / name)} for name in ("lr", "xgb")}
    found = [
        Server("flask-predict",
               [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
               path="/v1/projects/bench/models/{model}:predict", cwd=ROOT,
               env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
                    "FLASK_PREDICT_MODELS": json.dumps(config)},
               check=check_predictions),
        Server("bare-wsgi", floors.gunicorn_command("bare"), path="/"),
        Server("flask-floor", floors.gunicorn_command("flask_app"), path="/"),
    ]
    if with_kserve:
        found.append(Server(
            "kserve",
            [str(ensure_kserve_venv()), str(HERE / "kserve_server.py"),
             "--lr_dir", str(models / "lr" / "1"), "--xgb_dir", str(models / "xgb" / "1"),
             "--http_port", "{port}", "--workers", "2"],
            path="/v1/models/{model}:predict", ready_path="/v1/models/lr",
            check=check_predictions))
    return found



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-kserve", action="store_true", help="skip KServe")
    parser.add_argument("--only", nargs="*", help="run only these servers")
    parser.add_argument("--rows", nargs="*", type=int, default=list(ROW_COUNTS),
                        help="request sizes (default: 1 100 10000)")
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args()

    with trained_models() as work:
        chosen = [s for s in servers(work / "models", not args.no_kserve)
                  if not args.only or s.name in args.only]
        results = harness.run_rounds(chosen, scenarios(work, args.rows), args.rounds,
                                     args.seconds, log_dir=work)
    names = [s.name for s in chosen]
    sections = [f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, "
                f"{args.rounds} rounds of {args.seconds:g} s per scenario, medians; "
                "16 connections, 2 workers per server."]
    for baseline in ("kserve", "flask-floor", "bare-wsgi"):
        if baseline in names:
            sections.append(f"Requests/s against {baseline}:\n\n"
                            + harness.ratio_table(results, baseline, names))
    for baseline in ("kserve", "flask-floor"):
        if baseline in names:
            sections.append(f"Requests per CPU second of the server's processes against "
                            f"{baseline} (what other load on the machine hardly moves):\n\n"
                            + harness.ratio_table(results, baseline, names,
                                                  "requests_per_cpu_s"))
    sections.append("Requests/s per round:\n\n" + harness.raw_table(results))
    report = "\n\n".join(sections)
    print("\n" + report)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / time.strftime("%Y%m%d-%H%M%S.md")).write_text(report + "\n")
    if not args.no_readme:
        harness.update_readme("results", report)


if __name__ == "__main__":
    main()
