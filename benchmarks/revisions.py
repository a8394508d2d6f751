"""Per-request cost of two source trees, side by side in one run: the same 1-row and
100-row requests through every protocol, in-process (Flask's test client, no network), for
a 20-feature LogisticRegression and a 100-tree XGBoost model.

Each round runs every tree once, alternating, in a fresh interpreter; the medians of the
rounds are compared as ratios to the first tree (the baseline), so machine noise that is the
same for both trees cancels out. Used to check that a refactoring costs no throughput:

    git worktree add /tmp/before <rev>
    .venv/bin/python benchmarks/revisions.py /tmp/before . [--rounds 5] [--seconds 2] [--cpu]

``--cpu`` counts requests per CPU second of the process instead of per second: on a machine
other work keeps busy, what the requests spend moves far less than how long they wait.
``--worker`` sets the process up as the server sets up each worker
(``PREDICT_MANAGE_PROCESS``), where it would otherwise keep the defaults of an embedding app.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent

ROUTES = {
    "aiplatform": ("/v1/projects/p/models/{m}:predict", lambda rows: {"instances": rows}),
    "tfserving": ("/v1/models/{m}:predict", lambda rows: {"instances": rows}),
    "kserve_v2": ("/v2/models/{m}/infer", lambda rows: {"inputs": [
        {"name": "x", "shape": [len(rows), len(rows[0])], "datatype": "FP64",
         "data": [v for row in rows for v in row]}]}),
}

CHILD = r'''
import json, sys, time
import numpy as np
from flask import Flask
sys.path.insert(0, sys.argv[1])
from flask_predict import FlaskPredict
from flask_predict_sklearn import SklearnPredictor
from flask_predict_xgboost import XGBoostPredictor
models, seconds, routes = sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])
clock = time.process_time if sys.argv[6] == "cpu" else time.perf_counter
app = Flask("bench")
plugins = {"lr": "sklearn", "xgb": "xgboost"}
app.config.update(PREDICT_MODELS={m: {"base_path": f"{models}/{m}", "predictor": p}
                                  for m, p in plugins.items()}, PREDICT_POLL_SECONDS=0,
                  PREDICT_MANAGE_PROCESS=sys.argv[7] == "worker")
if len(sys.argv) > 5 and sys.argv[5] == "bare":  # the core alone: no metrics, no access log
    from flask_predict.settings.config import DEFAULTS
    for key, off in (("PREDICT_METRICS", False), ("PREDICT_ACCESS_LOG", None)):
        if key in DEFAULTS:
            app.config[key] = off
# registered by hand: each tree's own plugin classes, whatever the installed entry points say
predict = FlaskPredict()
predict.register_predictor("sklearn", SklearnPredictor)
predict.register_predictor("xgboost", XGBoostPredictor)
predict.init_app(app)
client = app.test_client()
rng = np.random.default_rng(0)
out = {}
for name, (path, body) in routes.items():
    for model in ("lr", "xgb"):
        for rows in (1, 100):
            payload = json.dumps(body[str(rows)]).encode()
            url = path.format(m=model)
            assert client.post(url, data=payload).status_code == 200, (name, model)
            done, start, spent = 0, time.perf_counter(), clock()
            while time.perf_counter() - start < seconds:
                client.post(url, data=payload, content_type="application/json")
                done += 1
            out[f"{name} {model} {rows}"] = done / (clock() - spent)
print(json.dumps(out))
'''


def train(folder: Path) -> None:
    import joblib
    import numpy as np
    import xgboost as xgb
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 20))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    (folder / "lr" / "1").mkdir(parents=True)
    joblib.dump(LogisticRegression().fit(x, y), folder / "lr" / "1" / "model.joblib")
    (folder / "xgb" / "1").mkdir(parents=True)
    xgb.XGBClassifier(n_estimators=100, max_depth=4).fit(x, y).save_model(
        str(folder / "xgb" / "1" / "model.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="source trees; the first is the baseline")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--bare", action="store_true",
                        help="metrics and access log off in trees that have them")
    parser.add_argument("--cpu", action="store_true",
                        help="requests per CPU second of the process, not per second")
    parser.add_argument("--worker", action="store_true",
                        help="the process set up as a server's worker is "
                             "(PREDICT_MANAGE_PROCESS: thread pools, heap thresholds, gc.freeze)")
    args = parser.parse_args()
    import numpy as np

    rng = np.random.default_rng(1)
    bodies = {name: {str(n): make(rng.normal(size=(n, 20)).round(6).tolist())
                     for n in (1, 100)} for name, (_, make) in ROUTES.items()}
    routes = json.dumps({name: [path, bodies[name]] for name, (path, _) in ROUTES.items()})
    results = run_rounds(args.trees, args.rounds, lambda root, models: [
        "-c", CHILD, root, models, str(args.seconds), routes, "bare" if args.bare else "full",
        "cpu" if args.cpu else "wall", "worker" if args.worker else "embedded"])
    report(results, "req/CPU s" if args.cpu else "req/s")


def tree_env(root: str) -> dict[str, str]:
    """The environment of a child serving from source tree *root*: its core and plugins
    first on the path, one native thread each (both trees get the same, steadier pools)."""
    plugins = os.pathsep.join([root] + [f"{root}/plugins/{p}" for p in
                                        ("sklearn", "xgboost", "custom")])
    return {**os.environ, "PYTHONPATH": plugins, "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_rounds(trees: list[str], rounds: int, argv: Callable[[str, str], list[str]]
               ) -> dict[str, list[dict[str, float]]]:
    """Each tree's child process *rounds* times, the trees alternating, each child's last
    line of output read as its JSON results; ``argv(root, models)``: a child's arguments
    (after the interpreter) for a source tree and the trained models' folder."""
    results: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory() as models:
        train(Path(models))
        for _ in range(rounds):
            for tree in trees:
                root = str(Path(tree).resolve())
                done = subprocess.run([sys.executable, *argv(root, models)],
                                      env=tree_env(root), check=True, capture_output=True,
                                      text=True)
                results[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def report(results: dict[str, list[dict[str, float]]], unit: str) -> None:
    """Each case's median over the rounds, the first tree's in *unit*, the others' as
    ratios to it (a Markdown table)."""
    trees = list(results)
    base = trees[0]
    print(f"| case | {base} {unit} | " + " | ".join(f"{t} / {base}" for t in trees[1:]) + " |")
    print("|---|---|" + "---|" * (len(trees) - 1))
    for case in results[base][0]:
        medians = {t: statistics.median(r[case] for r in results[t]) for t in trees}
        ratios = " | ".join(f"{medians[t] / medians[base]:.2f}x" for t in trees[1:])
        print(f"| {case} | {medians[base]:.0f} | {ratios} |")


if __name__ == "__main__":
    main()
