"""Issue 6's warm-up benchmark: latency of the first request on a freshly loaded version.

Serves the three models of ``memory_reload.py`` (scikit-learn ``rf``, XGBoost ``xgb``,
TensorFlow ``tf``) with ``gunicorn -c gunicorn.conf.py wsgi:app`` and one sync worker (so
the first request surely reaches the new version), then for each round publishes a new
version of every model, alternately without and with ``assets.extra/warmup_requests.json``
(one sample request), waits until the version is served and times the first request to it
and the next 20. Prints, per model, the median first-request latency with and without
warm-up and the median steady-state latency, as ratios against the steady state.

    .venv/bin/python benchmarks/warmup_latency.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import memory_reload  # noqa: E402

WARMUP_FILE = Path("assets.extra") / "warmup_requests.json"


def publish(base: Path, version: int, body: bytes, warm: bool) -> None:
    staging = base / f".{version}.tmp"
    shutil.copytree(base / "1", staging)
    if warm:
        (staging / "assets.extra").mkdir(exist_ok=True)
        (staging / WARMUP_FILE).write_bytes(b"[" + body + b"]")
    staging.rename(base / str(version))


def timed_post(port: int, model: str, body: bytes) -> float:
    start = time.perf_counter()
    status, data = harness.post(port, f"/v1/models/{model}:predict", body)
    elapsed = time.perf_counter() - start
    assert status == 200, data[:300]
    return elapsed * 1000


def run(rounds: int) -> dict[str, dict[str, list[float]]]:
    root = Path(tempfile.mkdtemp(prefix="warmup-latency-"))
    try:
        models = memory_reload.build_models(root, tensorflow=True)
        bodies = {name: memory_reload.body_for(name) for name in models}
        server = memory_reload.reload_server(models, 0.2, workers=1)
        times: dict[str, dict[str, list[float]]] = {
            name: {"cold": [], "warm": [], "steady": []} for name in models}
        with harness.started(server, timeout=300, log_dir=root) as running:
            port = running.port
            version = 1
            for round_ in range(2 * rounds):
                version += 1
                warm = round_ % 2 == 1
                for name in models:
                    publish(root / name, version, bodies[name], warm)
                for name in models:
                    while not memory_reload.serves(port, name, version, workers=1):
                        time.sleep(0.1)
                for name in models:
                    times[name]["warm" if warm else "cold"].append(
                        timed_post(port, name, bodies[name]))
                    times[name]["steady"].extend(
                        timed_post(port, name, bodies[name]) for _ in range(20))
        return times
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times = run(args.rounds)
    print("| model | steady state (median) | first request, no warm-up | first request, "
          "warm-up file |")
    print("|---|---|---|---|")
    for name, kinds in times.items():
        steady = statistics.median(kinds["steady"])
        cold = statistics.median(kinds["cold"])
        warm = statistics.median(kinds["warm"])
        print(f"| {name} | {steady:.1f} ms (1.0x) | {cold:.1f} ms ({cold / steady:.1f}x) | "
              f"{warm:.1f} ms ({warm / steady:.1f}x) |")


if __name__ == "__main__":
    main()
