"""Start-up: from the command to the first ready answer, for flask-predict and a plain Flask
app serving the same two models (``lr``, a 20-feature LogisticRegression, and ``xgb``, a
100-tree XGBoost Booster), each under gunicorn with 2 sync workers, in turns in one run.

The plain app (``plain_app.py``, written beside the models) is the 30 lines a user would
write: it loads both files with joblib and XGBoost at import in each worker and answers.

``python benchmarks/startup.py [--rounds 5] [--baseline TREE]``: the median of each and
their ratio; ``--baseline`` adds flask-predict as another checkout (an older commit's
``git worktree``) has it, in the same turns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

import harness
import models

ROOT = Path(__file__).resolve().parents[1]

PLAIN_APP = '''
import os
import joblib
import numpy as np
import xgboost as xgb
from flask import Flask, jsonify, request

HERE = os.path.dirname(__file__)
lr = joblib.load(os.path.join(HERE, "lr", "1", "model.joblib"))
booster = xgb.Booster(model_file=os.path.join(HERE, "xgb", "1", "model.json"))
app = Flask(__name__)


@app.get("/ready")
def ready():
    return jsonify(ready=True)


@app.post("/v1/models/<name>:predict")
def predict(name):
    rows = np.asarray(request.get_json()["instances"], dtype=float)
    if name == "lr":
        return jsonify(predictions=lr.predict(rows).tolist())
    return jsonify(predictions=booster.inplace_predict(rows).tolist())
'''


def flask_predict(name: str, tree: Path, root: Path) -> harness.Server:
    """flask-predict as *tree* has it (gunicorn imports the package from its folder)."""
    config = {model: {"base_path": str(root / model)} for model in ("lr", "xgb")}
    return harness.Server(
        name, [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
        path="/", cwd=tree, env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
                                 "FLASK_PREDICT_MODELS": json.dumps(config),
                                 "PYTHONPATH": str(tree)},
        ready_path="/v2/health/ready", ready_status=200)


def servers(root: Path, baseline: Path | None) -> list[harness.Server]:
    ours = flask_predict("flask-predict", ROOT, root)
    plain = harness.Server(
        "plain Flask", [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind",
                        "127.0.0.1:{port}", "--chdir", str(root), "plain_app:app"],
        path="/", ready_path="/ready", ready_status=200)
    found = [ours, plain]
    if baseline is not None:
        found.append(flask_predict(f"flask-predict at {baseline.name}", baseline, root))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout to start too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = models.train(Path(folder))
        (root / "plain_app.py").write_text(textwrap.dedent(PLAIN_APP))
        times: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for server in servers(root, args.baseline):
                with harness.started(server, log_dir=root) as running:
                    times.setdefault(server.name, []).append(running.ready_s)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["plain Flask"]
    for name, value in medians.items():
        print(f"{name}: ready in {value:.2f} s (median of {args.rounds}), "
              f"{value / base:.2f}x the plain Flask app")


if __name__ == "__main__":
    main()
