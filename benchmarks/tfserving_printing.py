"""What printing numbers as TF Serving does costs (``codecs.dumps_tfserving``, its
``WriteDecimal`` rule), against printing the shortest repr (``codecs.dumps``, orjson, what the
TF Serving route printed before), on the 10,000-row answers of ``benchmarks/tfserving.py``:
``half_plus_two`` (float32), ``lr`` (``predict`` int64 + ``predict_proba`` float64, one
object per row) and ``xgb`` (float32), and on 1-row answers. In-process, best of *--repeat*;
ratios measured in the same run.

    .venv/bin/python benchmarks/tfserving_printing.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flask_predict import codecs  # noqa: E402
from flask_predict.protocols.tfserving import wire  # noqa: E402


def answers(rows: int) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    proba = rng.random((rows, 2))
    proba /= proba.sum(axis=1, keepdims=True)
    return {
        "half_plus_two": {"y": (rng.random(rows) * 10 + 2).astype(np.float32)},
        "lr": {"predict": proba.argmax(axis=1), "predict_proba": proba},
        "xgb": {"predictions": rng.random(rows).astype(np.float32)},
    }


def _shortest(outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The row answer as the route built it before: numpy rows for orjson to print."""
    if len(outputs) == 1:
        return {"predictions": next(iter(outputs.values()))}
    names = list(outputs)
    return {"predictions": [dict(zip(names, row)) for row in zip(*outputs.values())]}


def best(function: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print("| answer | shortest repr (ms) | TF Serving's rule (ms) | ratio |")
    print("| --- | --- | --- | --- |")
    for rows in (1, 10_000):  # encoding and printing, as the route does both
        for model, outputs in answers(rows).items():
            old = best(lambda: codecs.dumps(_shortest(outputs)), args.repeat)
            new = best(lambda: codecs.dumps_tfserving(wire.encode_predict(outputs, True)),
                       args.repeat)
            print(f"| {model} {rows:,} rows | {old * 1e3:.3f} | {new * 1e3:.3f} | "
                  f"{new / old:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
