"""One-row speed of a LightGBM model against an XGBoost model of the same size, in one
process: the goal is LightGBM within 1.1x of XGBoost's CPU time.

Both models are trained on the benchmark's data (``models.py``: 2,000 rows, 20 features,
binary): ``xgb``, the benchmark's 100-tree depth-6 Booster, and ``lgb``, 100 LightGBM trees
of depth 6 (up to 64 leaves, what a full depth-6 tree has), saved with ``save_model``. The
deployment app serves both (``wsgi.py``, one thread, as a worker on 2 cores), and each is
measured, taking turns, three ways:

* ``predictor``: the plugin's ``predict_tensors`` of one row (what every tensor protocol
  calls);
* ``AI Platform``, 1 and 100 rows: a whole request through the app's WSGI callable
  (``profile_requests.wsgi_call``), JSON in and out.

CPU time of this thread per call, the best of 5 batches (``profile_requests.cpu_us``), the
ratio LightGBM / XGBoost of each round, and the median of the rounds.

    .venv/bin/python benchmarks/lightgbm_vs_xgboost.py [--rounds 3] [--no-readme]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
import models  # noqa: E402
from profile_requests import cpu_us, wsgi_call  # noqa: E402

NAMES = ("xgb", "lgb")


def train(root: Path) -> None:
    """``root/xgb/1/model.json`` and ``root/lgb/1/model.txt``."""
    import lightgbm as lgb

    (root / "xgb" / "1").mkdir(parents=True)
    models.train_xgb_booster().save_model(root / "xgb" / "1" / "model.json")
    x, y = models.training_data()
    booster = lgb.train({"objective": "binary", "max_depth": 6, "num_leaves": 64,
                         "min_data_in_leaf": 5, "num_threads": 1, "verbose": -1},
                        lgb.Dataset(x, y), num_boost_round=100)
    (root / "lgb" / "1").mkdir(parents=True)
    booster.save_model(root / "lgb" / "1" / "model.txt")


def make_app(root: Path) -> Any:
    """The deployment app serving both models, models loaded once, one thread."""
    os.environ["FLASK_PREDICT_MODELS"] = json.dumps(
        {name: {"base_path": str(root / name)} for name in NAMES})
    os.environ["FLASK_PREDICT_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"  # what a worker's process setup gives both plugins
    os.environ["FLASK_PREDICT_POLL_SECONDS"] = "0"
    from flask_predict.observability import metrics

    metrics.FLUSH_SECONDS = 60.0
    import wsgi

    return wsgi.app


def calls(app: Any, root: Path) -> dict[str, dict[str, Callable[[], None]]]:
    """Per way of asking, per model: one call."""
    from flask_predict_lightgbm import LightGBMPredictor
    from flask_predict_xgboost import XGBoostPredictor

    predictors = {"xgb": XGBoostPredictor.from_path(str(root / "xgb" / "1")),
                  "lgb": LightGBMPredictor.from_path(str(root / "lgb" / "1"))}
    row = {"inputs": models.rows(1)}

    def predicting(predictor: Any) -> Callable[[], None]:
        def call() -> None:
            predictor.predict_tensors(row)
        return call

    ways: dict[str, dict[str, Callable[[], None]]] = {"predictor, 1 row": {
        name: predicting(predictor) for name, predictor in predictors.items()}}
    for count in (1, 100):
        body = models.instances(models.rows(count))
        ways[f"AI Platform, {count} row{'s' if count > 1 else ''}"] = {
            name: wsgi_call(app, f"/v1/models/{name}:predict", body) for name in NAMES}
    return ways


def measure(ways: dict[str, dict[str, Callable[[], None]]], rounds: int
            ) -> dict[str, dict[str, list[float]]]:
    """CPU microseconds per call, per way, per model, one figure a round; the models take
    turns within each round."""
    found: dict[str, dict[str, list[float]]] = {
        way: {name: [] for name in NAMES} for way in ways}
    for _ in range(rounds):
        for way, per_model in ways.items():
            for name in NAMES:
                found[way][name].append(cpu_us(per_model[name], 2000 if "100" not in way
                                               else 500))
    return found


def report(found: dict[str, dict[str, list[float]]]) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d %H:%M')}, load {harness.load_average()}: "
             "CPU time of one thread per call (best of 5 batches), median of the rounds; "
             "the ratio is LightGBM's over XGBoost's in each round (goal: 1.1x at most).",
             "", "| way | XGBoost (us) | LightGBM (us) | LightGBM / XGBoost (rounds) |",
             "|---|---|---|---|"]
    for way, per_model in found.items():
        ratios = [lgb / xgb for xgb, lgb in zip(per_model["xgb"], per_model["lgb"])]
        lines.append(f"| {way} | {statistics.median(per_model['xgb']):.0f} | "
                     f"{statistics.median(per_model['lgb']):.0f} | "
                     f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        train(root)
        app = make_app(root)
        text = report(measure(calls(app, root), args.rounds))
    print(text)
    if not args.no_readme:
        harness.update_readme("lightgbm", text)


if __name__ == "__main__":
    main()
