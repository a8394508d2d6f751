"""What printing numbers as TF Serving does costs (``codecs.dumps_tfserving``, its
``WriteDecimal`` rule), against printing the shortest text (``codecs.dumps``, orjson,
``PREDICT_TFSERVING_NUMBERS = "shortest"``), and that against the shortest answer built as
one object per row (the route's way before), on the 100- and 10,000-row answers of
``benchmarks/tfserving.py``:
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


def _object_per_row(outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The shortest-text row answer as the route built it before: one object per row of
    numpy rows, for orjson to print."""
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
    print("| answer | shortest (ms) | TF Serving's rule (ms) | rule / shortest "
          "| shortest, an object per row (ms) | shortest / that |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows in (1, 100, 10_000):  # encoding and printing, as the route does both
        for model, outputs in answers(rows).items():
            short = best(lambda: codecs.dumps_tfserving(wire.encode_predict(outputs, True, False),
                                                        False), args.repeat)
            rule = best(lambda: codecs.dumps_tfserving(wire.encode_predict(outputs, True)),
                        args.repeat)
            before = best(lambda: codecs.dumps(_object_per_row(outputs)), args.repeat)
            print(f"| {model} {rows:,} rows | {short * 1e3:.3f} | {rule * 1e3:.3f} | "
                  f"{rule / short:.1f}x | {before * 1e3:.3f} | {short / before:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
