"""Issue 3's speed benchmark: TF Serving-format predict on TensorFlow, scikit-learn, XGBoost.

Serves TF Serving's ``half_plus_two`` (exported as the tests export it) and the 20-feature
LogisticRegression ``lr`` and 100-tree XGBoost Booster ``xgb`` that ``run.py`` trains, with
``gunicorn -c gunicorn.conf.py wsgi:app`` (2 sync workers), and sends
``{"instances": [...]}`` bodies of 1 and 10,000 rows at 16 connections to:

* ``tfserving``: ``POST /v1/models/<model>:predict`` (all outputs: ``lr`` answers
  ``predict`` and ``predict_proba`` per row);
* ``aiplatform``: ``POST /v1/projects/bench/models/<model>:predict``, the same body on the
  AI Platform route of the same server (``predict`` only);
* the floors of ``floors.py``: ``bare-wsgi`` and ``flask-floor`` under gunicorn.

Reports median requests/s as ratios against the Flask floor and against the AI Platform
route, measured in the same run. Medians go to ``README.md``.

    .venv/bin/python benchmarks/tfserving.py [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floors  # noqa: E402
import harness  # noqa: E402
import run  # noqa: E402
from harness import Scenario, Server  # noqa: E402

ROOT = HERE.parent
ROW_COUNTS = (1, 10_000)
MODELS = ("half_plus_two", "lr", "xgb")


def write_scalar_body(path: Path, rows: int) -> Path:
    """``{"instances": [x, ...]}``: one float per row, half_plus_two's input."""
    values = np.random.default_rng(rows).normal(size=rows)
    path.write_text('{"instances":[' + ",".join(f"{v:.6f}" for v in values) + "]}")
    return path


def scenarios(work: Path) -> list[Scenario]:
    found = []
    for rows in ROW_COUNTS:
        label = f"{rows:,} row{'s' if rows > 1 else ''}"
        features = run.write_body(work / f"features-{rows}.json", rows)
        scalars = write_scalar_body(work / f"scalars-{rows}.json", rows)
        for model in MODELS:
            body = scalars if model == "half_plus_two" else features
            found.append(Scenario(f"{model} {label}", model, body, connections=16, rows=rows))
    return found


def export_half_plus_two(base: Path) -> Path:
    """TF Serving's half_plus_two test model, exported as the tests export it (in a child
    process, so TensorFlow stays out of the load generator)."""
    code = ("import sys; from pathlib import Path; from tests.tf_models import "
            "export_half_plus_two_tf1 as export; export(Path(sys.argv[1]), Path(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(base), str(base.parent / "assets")],
                   cwd=ROOT, check=True)
    return base


def servers(models: Path) -> list[Server]:
    config = {"lr": {"base_path": str(models / "lr")}, "xgb": {"base_path": str(models / "xgb")},
              "half_plus_two": {"base_path": str(models / "half_plus_two")}}
    env = {"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
           "FLASK_PREDICT_MODELS": json.dumps(config)}
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
    return [
        Server("tfserving", command, path="/v1/models/{model}:predict", cwd=ROOT, env=env,
               ready_path="/v1/models/half_plus_two", ready_status=200,
               check=run.check_predictions),
        Server("aiplatform", command, path="/v1/projects/bench/models/{model}:predict",
               cwd=ROOT, env=env, ready_path="/v1/models/half_plus_two", ready_status=200,
               check=run.check_predictions),
        Server("bare-wsgi", floors.gunicorn_command("bare"), path="/"),
        Server("flask-floor", floors.gunicorn_command("flask_app"), path="/"),
    ]


def report(results: list[harness.Result], rounds: int, seconds: float) -> str:
    return "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, {rounds} rounds of "
        f"{seconds:g} s per scenario, medians; 16 connections; every server 2 gunicorn sync "
        "workers.",
        "",
        "Against the Flask floor:",
        "",
        harness.ratio_table(results, "flask-floor",
                            ["flask-floor", "bare-wsgi", "tfserving", "aiplatform"]),
        "",
        "TF Serving route against the AI Platform route of the same model and server:",
        "",
        harness.ratio_table(results, "aiplatform", ["aiplatform", "tfserving"]),
        "",
        "Requests/s per round:",
        "",
        harness.raw_table(results),
    ])



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args()

    harness.require_wrk()
    for name in run.THREAD_VARIABLES:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="flask-predict-tfserving-bench-") as tmp:
        work = Path(tmp)
        run.train_models(work / "models")
        export_half_plus_two(work / "models" / "half_plus_two")
        results = harness.run_rounds(servers(work / "models"), scenarios(work), args.rounds,
                                     args.seconds, log_dir=work)
    text = report(results, args.rounds, args.seconds)
    print("\n" + text)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / time.strftime("tfserving-%Y%m%d-%H%M%S.md")).write_text(text + "\n")
    if not args.no_readme:
        harness.update_readme("tfserving", text)


if __name__ == "__main__":
    main()
