"""Issue 6's memory benchmark: worker RSS across 20 successive version replacements, each
worker loading its own copies (``FLASK_PREDICT_SHARED_MODELS=false``; the shared models'
replacements are measured by ``memory_shared.py``).

Builds a scikit-learn RandomForest (``rf``), a 300-round XGBoost Booster (``xgb``) and a
TensorFlow SavedModel with a 1000x1000 weight matrix (``tf``), serves them with
``gunicorn -c gunicorn.conf.py wsgi:app`` (2 sync workers, ``PREDICT_POLL_SECONDS`` 0.2),
then 20 times publishes a new version of all three (a copy of version 1 renamed into
place), waits until every worker serves it and sends each model a few requests. Each
worker's RSS after the last replacement is reported as a ratio of its RSS after the first
load (target: at most 1.10).

    .venv/bin/python benchmarks/memory_reload.py [--rounds 20] [--no-tensorflow]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

ROOT = HERE.parent
FEATURES = 20
TF_WIDTH = 1000
POLL_SECONDS = 0.2


def train_sklearn(base: Path) -> None:
    import joblib
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, FEATURES))
    y = (x[:, 0] + rng.normal(size=2000) > 0).astype(int)
    (base / "1").mkdir(parents=True)
    model = RandomForestClassifier(n_estimators=60, random_state=0, n_jobs=1).fit(x, y)
    joblib.dump(model, base / "1" / "model.joblib")


def train_xgboost(base: Path) -> None:
    import xgboost as xgb

    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, FEATURES))
    y = (x[:, 1] > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=300)
    (base / "1").mkdir(parents=True)
    booster.save_model(base / "1" / "model.json")


def export_tensorflow(base: Path) -> None:
    """A TF2 SavedModel: ``y = relu(x @ w)`` with ``w`` 1000x1000 float32 (4 MB)."""
    code = f"""
import numpy as np, tensorflow as tf
class Dense(tf.Module):
    def __init__(self):
        self.w = tf.Variable(np.random.default_rng(2).normal(size=({TF_WIDTH}, {TF_WIDTH}))
                             .astype(np.float32))
    @tf.function(input_signature=[tf.TensorSpec([None, {TF_WIDTH}], tf.float32, name="x")])
    def serve(self, x):
        return {{"y": tf.nn.relu(tf.matmul(x, self.w))}}
module = Dense()
tf.saved_model.save(module, {str(base / "1")!r}, signatures={{"serving_default": module.serve}})
"""
    harness.export_in_child(code)


def build_models(root: Path, tensorflow: bool) -> dict[str, dict[str, Any]]:
    train_sklearn(root / "rf")
    train_xgboost(root / "xgb")
    models = {"rf": {"base_path": str(root / "rf")}, "xgb": {"base_path": str(root / "xgb")}}
    if tensorflow:
        export_tensorflow(root / "tf")
        models["tf"] = {"base_path": str(root / "tf")}
    return models


def body_for(model: str) -> bytes:
    width = TF_WIDTH if model == "tf" else FEATURES
    row = np.random.default_rng(3).normal(size=width).round(4).tolist()
    return json.dumps({"instances": [row] * 4}).encode()


def publish(base: Path, version: int) -> None:
    """Copy version 1 under a temporary name and rename it into place (the documented way)."""
    staging = base / f".{version}.tmp"
    shutil.copytree(base / "1", staging)
    staging.rename(base / str(version))


def worker_pids(master: int) -> list[int]:
    with open(f"/proc/{master}/task/{master}/children") as file:
        return sorted(int(pid) for pid in file.read().split())


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def serves(port: int, model: str, version: int, workers: int) -> bool:
    """True when 8 consecutive status requests show only *version* loaded."""
    for _ in range(4 * workers):
        status, data = get(port, f"/v2/models/{model}")
        if status != 200 or json.loads(data)["versions"] != [str(version)]:
            return False
    return True


def get(port: int, path: str) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def exercise(port: int, models: Sequence[str], workers: int) -> None:
    for model in models:
        for _ in range(4 * workers):
            status, data = harness.post(port, f"/v1/models/{model}:predict", body_for(model))
            assert status == 200, data[:300]


def reload_server(models: dict[str, Any], poll_seconds: float, workers: int) -> harness.Server:
    """flask-predict under gunicorn, watching the model folders every *poll_seconds*."""
    return harness.Server(
        name="flask-predict", path="/v1/models/{model}:predict", cwd=ROOT,
        command=[sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                 "--bind", "127.0.0.1:{port}", "wsgi:app"],
        # each worker loads and replaces its own copies (shared models replace the workers
        # instead: memory_shared.py)
        env={"FLASK_PREDICT_MODELS": json.dumps(models), "FLASK_PREDICT_SHARED_MODELS": "false",
             "FLASK_PREDICT_POLL_SECONDS": str(poll_seconds), "WEB_CONCURRENCY": str(workers),
             "FLASK_PREDICT_PROTOCOLS": '["tfserving", "kserve_v2"]'},
        ready_path="/v2/health/ready", ready_status=200)


def run(rounds: int, tensorflow: bool, workers: int) -> list[dict[int, int]]:
    """RSS (KiB) of every worker after the first load, then after each replacement."""
    root = Path(tempfile.mkdtemp(prefix="memory-reload-"))
    try:
        models = build_models(root, tensorflow)
        server = reload_server(models, POLL_SECONDS, workers)
        with harness.started(server, timeout=300, log_dir=root) as running:
            port = running.port
            exercise(port, list(models), workers)
            time.sleep(2)
            pids = worker_pids(running.group)
            samples = [{pid: rss_kib(pid) for pid in pids}]
            for version in range(2, rounds + 2):
                for name in models:
                    publish(root / name, version)
                deadline = time.monotonic() + 120
                while not all(serves(port, name, version, workers) for name in models):
                    assert time.monotonic() < deadline, f"version {version} never served"
                    time.sleep(POLL_SECONDS)
                exercise(port, list(models), workers)
                if version > 2:  # the replaced version's files go, as in a real rollout
                    for name in models:  # (version 1 stays: it is the copies' source)
                        shutil.rmtree(root / name / str(version - 1))
                time.sleep(3 * POLL_SECONDS)  # the replaced version is closed a poll later
                assert worker_pids(running.group) == pids, "a worker was replaced"
                samples.append({pid: rss_kib(pid) for pid in pids})
                print(f"round {version - 1:2d}: " + "  ".join(
                    f"{pid}: {kib / 1024:7.1f} MiB" for pid, kib in samples[-1].items()),
                    flush=True)
        return samples
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-tensorflow", dest="tensorflow", action="store_false")
    args = parser.parse_args()
    samples = run(args.rounds, args.tensorflow, args.workers)
    first, last = samples[0], samples[-1]
    print()
    print("| worker | RSS after first load | RSS after %d replacements | ratio |" % args.rounds)
    print("|---|---|---|---|")
    for pid in first:
        print(f"| {pid} | {first[pid] / 1024:.1f} MiB | {last[pid] / 1024:.1f} MiB | "
              f"{last[pid] / first[pid]:.3f} |")
    worst = max(last[pid] / first[pid] for pid in first)
    print(f"\nworst ratio {worst:.3f} (target <= 1.10): {'PASS' if worst <= 1.10 else 'FAIL'}")


if __name__ == "__main__":
    main()
