"""The batch scheduler's cost and gain, in one process, against calling the model directly.

An MLP of realistic size (20 -> 512 -> 512 -> 1, float32), as a TensorFlow ``tf.function``
(``--model tensorflow``, the default: a call costs far more than its rows) or in numpy
(``--model numpy``: a call costs its rows, nothing to amortize), runs one-row requests from
N caller threads, as the runner's connection threads would send them:

* *direct*: each caller runs the model itself, one at a time (a lock: one model, as a
  runner without batching serves it);
* *batched*: each caller submits to a ``BatchScheduler`` (``max_batch_size`` = callers,
  ``batch_timeout_micros`` 0, one batch thread), which runs what arrived together.

At 1 caller the ratio is the scheduler's overhead on latency; at 16, the gain of batching.
Figures are requests/s of *batched* over *direct*, measured in the same run, alternating.

    .venv/bin/python benchmarks/batching.py [--model numpy] [--callers 1 16] [--seconds 3]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flask_predict.runner.batching import BatchKey, BatchScheduler  # noqa: E402
from flask_predict.settings.batching import BatchingParameters  # noqa: E402

KEY = BatchKey.of("mlp", 1, "serving_default")
rng = np.random.default_rng(0)
WEIGHTS = [rng.standard_normal(shape, np.float32) * 0.05
           for shape in ((20, 512), (512, 512), (512, 1))]


def numpy_mlp(key: BatchKey, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    hidden = inputs["x"]
    for weights in WEIGHTS[:-1]:
        hidden = np.maximum(hidden @ weights, 0)
    return {"y": hidden @ WEIGHTS[-1]}


def tensorflow_mlp() -> Callable[[BatchKey, dict[str, np.ndarray]], dict[str, np.ndarray]]:
    import tensorflow as tf

    weights = [tf.constant(w) for w in WEIGHTS]

    @tf.function(input_signature=[tf.TensorSpec([None, 20], tf.float32)])
    def forward(x: Any) -> Any:
        hidden = x
        for layer in weights[:-1]:
            hidden = tf.nn.relu(hidden @ layer)
        return hidden @ weights[-1]

    def run(key: BatchKey, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": forward(inputs["x"]).numpy()}

    return run


def rate(callers: int, seconds: float, call: Callable[[dict[str, np.ndarray]], Any]) -> float:
    """Requests per second that *callers* threads calling *call* complete."""
    done = [0] * callers
    stop = threading.Event()
    row = {"x": rng.standard_normal((1, 20), np.float32)}

    def loop(index: int) -> None:
        while not stop.is_set():
            call(row)
            done[index] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(callers)]
    for thread in threads:
        thread.start()
    time.sleep(seconds / 10)  # warm up
    start, before = time.perf_counter(), sum(done)
    time.sleep(seconds)
    count, elapsed = sum(done) - before, time.perf_counter() - start
    stop.set()
    for thread in threads:
        thread.join()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=["tensorflow", "numpy"], default="tensorflow")
    args = parser.parse_args()
    lock = threading.Lock()
    mlp = tensorflow_mlp() if args.model == "tensorflow" else numpy_mlp
    mlp(KEY, {"x": np.zeros((1, 20), np.float32)})  # traced before any timing

    def direct(row: dict[str, np.ndarray]) -> Any:
        with lock:
            return mlp(KEY, row)

    print("| callers | direct req/s | batched req/s | batched / direct |")
    print("| --- | --- | --- | --- |")
    for callers in args.callers:
        scheduler = BatchScheduler(BatchingParameters(
            max_batch_size=callers, batch_timeout_micros=0, num_batch_threads=1), mlp)
        rounds = []
        for _ in range(args.rounds):
            plain = rate(callers, args.seconds, direct)
            batched = rate(callers, args.seconds, lambda row: scheduler.submit(KEY, row))
            rounds.append((batched / plain, plain, batched))
        scheduler.close()
        rounds.sort()
        ratio, plain, batched = rounds[len(rounds) // 2]
        print(f"| {callers} | {plain:,.0f} | {batched:,.0f} | {ratio:.2f}x (rounds "
              f"{', '.join(f'{r[0]:.2f}' for r in rounds)}) |")


if __name__ == "__main__":
    main()
