"""Issue 5's benchmark: what the grps interface costs over the AI Platform route.

Trains the same two models as ``run.py`` (a 20-feature LogisticRegression ``lr`` and a
100-tree XGBoost Booster ``xgb``) and sends, at 16 connections, the same rows (1 and 100) as
an AI Platform ``{"instances": ...}`` body, a grps ``ndarray`` body and a grps ``gtensors``
body to ``flask-predict`` (``gunicorn -c gunicorn.conf.py wsgi:app``, 2 sync workers), and
the same bodies to the Flask floor (``floors.py``: a Flask view that drains the body and
answers a constant). It also compares grps's ``health/ready``, which reads the server-wide
online flag, with ``health/live``, which reads nothing.

Reported, as ratios measured in the same run: each grps scenario against the AI Platform
scenario with the same rows, ``ready`` against ``live``, and every scenario against the
floor. There is no grps reference server in this environment to compare with.

    .venv/bin/python benchmarks/grps.py [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
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
from harness import Result, Scenario, Server  # noqa: E402

ROOT = HERE.parent
ROW_COUNTS = (1, 100)
FORMATS = ("aiplatform", "grps ndarray", "grps gtensors")
PATHS = {"aiplatform": "/v1/projects/bench/models/{model}:predict",
         "grps ndarray": "/grps/v1/infer/predict?model={model}",
         "grps gtensors": "/grps/v1/infer/predict?model={model}"}


def write_body(path: Path, fmt: str, count: int) -> Path:
    """The same rows (6 decimals, as a client prints them) in one of the three formats."""
    values = np.random.default_rng(count).normal(size=(count, run.FEATURES))
    rows = "[" + ",".join("[" + ",".join(f"{v:.6f}" for v in row) + "]" for row in values) + "]"
    if fmt == "aiplatform":
        path.write_text('{"instances":' + rows + "}")
    elif fmt == "grps ndarray":
        path.write_text('{"ndarray":' + rows + "}")
    else:
        flat = ",".join(f"{v:.6f}" for v in values.ravel())
        path.write_text('{"gtensors":{"tensors":[{"name":"inputs","dtype":"DT_FLOAT32",'
                        '"shape":[%d,%d],"flat_float32":[%s]}]}}' % (count, run.FEATURES, flat))
    return path


def scenarios(work: Path) -> list[Scenario]:
    """The scenario's ``model`` is its whole request path (both servers take it as is)."""
    found = []
    for model in ("lr", "xgb"):
        for count in ROW_COUNTS:
            for fmt in FORMATS:
                body = write_body(work / f"{fmt.replace(' ', '-')}-{count}.json", fmt, count)
                found.append(Scenario(f"{model} {count} {fmt}",
                                      PATHS[fmt].replace("{model}", model), body, rows=count))
    empty = work / "empty.json"
    empty.write_text("{}")
    found += [Scenario("health live", "/grps/v1/health/live", empty),
              Scenario("health ready", "/grps/v1/health/ready", empty)]
    return found


def servers(models: Path) -> list[Server]:
    config = {name: {"base_path": str(models / name)} for name in ("lr", "xgb")}
    return [
        Server("flask-predict",
               [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
               path="{model}", cwd=ROOT, ready_path="/grps/v1/health/ready", ready_status=200,
               env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
                    "FLASK_PREDICT_MODELS": json.dumps(config)}),
        Server("flask-floor", floors.gunicorn_command("flask_app"), path="/"),
    ]


def pair_table(results: list[Result], pairs: list[tuple[str, str]]) -> str:
    """flask-predict's median requests/s in one scenario as a ratio of another's."""
    med = harness.medians(results)
    lines = ["| scenario | against | req/s | ratio |", "|---|---|---|---|"]
    for scenario, baseline in pairs:
        value, base = med[("flask-predict", scenario)], med[("flask-predict", baseline)]
        lines.append(f"| {scenario} | {baseline} | {value:.0f} | {value / base:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    harness.require_wrk()
    for name in run.THREAD_VARIABLES:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="flask-predict-bench-") as tmp:
        work = Path(tmp)
        run.train_models(work / "models")
        chosen = servers(work / "models")
        results = harness.run_rounds(chosen, scenarios(work), args.rounds, args.seconds,
                                     log_dir=work)
    pairs = [(f"{model} {count} {fmt}", f"{model} {count} aiplatform")
             for model in ("lr", "xgb") for count in ROW_COUNTS for fmt in FORMATS[1:]]
    pairs.append(("health ready", "health live"))
    report = "\n\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, {args.rounds} "
        f"round(s) of {args.seconds:g} s per scenario, medians; 16 connections, 2 workers.",
        "grps against AI Platform (same rows, same server), and the shared online flag:\n\n"
        + pair_table(results, pairs),
        "Against the Flask floor:\n\n"
        + harness.ratio_table(results, "flask-floor", [s.name for s in chosen]),
        "Requests/s per round:\n\n" + harness.raw_table(results)])
    print("\n" + report)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / time.strftime("grps-%Y%m%d-%H%M%S.md")).write_text(report + "\n")


if __name__ == "__main__":
    main()
