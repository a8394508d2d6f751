"""Faster exact predictors for XGBoost tree models: CPU time per call, and whether each
answers XGBoost's own numbers bit for bit.

Candidates, each on the benchmark's 100-tree ``xgb`` model (1 and 100 rows) and, for the
exactness check, on 2,000 random rows with 20% missing values (NaN) for a binary (100 trees), a
multiclass (3 x 30 trees) and a regression model (100 trees), values and margins:

* ``inplace_predict``: ``Booster.inplace_predict``, the reference (what the plugin did);
* ``DensePredict``: the same C call with its settings printed once;
* ``small-batch walk``: ``flask_predict_xgboost.small``, the trees walked in numpy for every
  row at once (XGBoost's bits, checked when the model loads);
* ``plugin (fastest)``: the plugin's path now, the walk up to a few rows, else DensePredict;
* ``DMatrix + predict``: a DMatrix per call, as KServe's xgbserver predicts;
* ``Treelite GTIL``: Treelite's general tree inference library on the converted model;
* ``TL2cgen``: the model compiled to C by TL2cgen and gcc, loaded beside the Booster.

Treelite and TL2cgen are installed the first time into ``benchmarks/.tree-libs``
(git-ignored, from ``requirements-trees.txt``); the project never imports them.

    .venv/bin/python benchmarks/tree_predictors.py [--no-readme]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import xgboost as xgb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TREE_LIBS = HERE / ".tree-libs"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "plugins" / "xgboost"))

import harness  # noqa: E402
import models  # noqa: E402
from flask_predict_xgboost.dense import DensePredict  # noqa: E402
from flask_predict_xgboost.small import fastest, small_batch_predict  # noqa: E402

Predict = Callable[[np.ndarray], np.ndarray]


def tree_libs() -> tuple[Any, Any]:
    """``treelite`` and ``tl2cgen``, installed into ``.tree-libs`` on first use."""
    if not TREE_LIBS.exists():
        print(f"installing Treelite and TL2cgen into {TREE_LIBS} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(TREE_LIBS), "-r",
                        str(HERE / "requirements-trees.txt")], check=True)
    sys.path.insert(0, str(TREE_LIBS))
    import tl2cgen
    import treelite
    import treelite.gtil

    return treelite, tl2cgen


def candidates(booster: xgb.Booster, work: Path) -> dict[bool, dict[str, Predict]]:
    """Every candidate for *booster*, for values (``False``) and margins (``True``), each
    answering shaped as ``inplace_predict``. The model is converted and compiled once."""
    treelite, tl2cgen = tree_libs()
    converted = treelite.frontend.from_xgboost(booster)
    library = work / f"model-{id(booster)}.so"
    tl2cgen.export_lib(converted, toolchain="gcc", libpath=str(library), nthread=2,
                       params={"parallel_comp": 2}, verbose=False)
    compiled = tl2cgen.Predictor(str(library), nthread=1, verbose=False)

    def shaped(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        flat = values.reshape(len(rows), -1)
        return flat[:, 0] if flat.shape[1] == 1 else flat

    def kinds(margin: bool) -> dict[str, Predict]:
        kind = "margin" if margin else "value"
        dense = DensePredict(booster, margin=margin)
        walk = small_batch_predict(booster, np.nan, (0, 0), margin, dense)
        if walk is None:
            raise RuntimeError("the small-batch walk refused the benchmark's model")
        return {
            "inplace_predict": lambda x: booster.inplace_predict(x, missing=np.nan,
                                                                 predict_type=kind),
            "DensePredict": dense,
            "small-batch walk": walk,
            "plugin (fastest)": fastest(booster, margin=margin),
            "DMatrix + predict": lambda x: booster.predict(xgb.DMatrix(x, nthread=1),
                                                           output_margin=margin),
            "Treelite GTIL": lambda x: shaped(treelite.gtil.predict(
                converted, x, nthread=1, pred_margin=margin), x),
            "TL2cgen (gcc)": lambda x: shaped(compiled.predict(
                tl2cgen.DMatrix(x, dtype="float32"), pred_margin=margin), x),
        }
    return {False: kinds(False), True: kinds(True)}


def cpu_us_per_call(predict: Predict, rows: np.ndarray, calls: int = 2000) -> float:
    """CPU time of this thread per call: the best of 5 batches (other load on the machine
    moves it much less than wall time)."""
    predict(rows)
    batches = []
    for _ in range(5):
        start = time.thread_time()
        for _ in range(calls // 5):
            predict(rows)
        batches.append((time.thread_time() - start) / (calls // 5) * 1e6)
    return min(batches)


def missing_rows(count: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, width)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    return x


def exactness(work: Path) -> dict[str, str]:
    """Per candidate: "bit for bit" or the largest difference from ``inplace_predict``
    over every model and output kind."""
    worst: dict[str, float] = {}
    for objective, rounds in (("binary:logistic", 100), ("multi:softprob", 30),
                              ("reg:squarederror", 100)):
        x = missing_rows(3000, 20, 1)
        y = np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1])
        params: dict[str, Any] = {"objective": objective, "max_depth": 6, "nthread": 1}
        if objective.startswith("multi"):
            params["num_class"] = 3
            y = np.digitize(y, [-0.5, 0.5])
        elif objective.startswith("binary"):
            y = (y > 0).astype(float)
        booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=rounds)
        data = missing_rows(2000, 20, 2)
        both = candidates(booster, work)
        for margin in (False, True):
            found = both[margin]
            reference = found["inplace_predict"](data)
            for name, predict in found.items():
                got = predict(data).astype(np.float32)
                same = got.shape == reference.shape and np.array_equal(got, reference)
                difference = 0.0 if same else float(
                    np.nanmax(np.abs(got.astype(np.float64) - reference))) \
                    if got.shape == reference.shape else float("inf")
                worst[name] = max(worst.get(name, 0.0), difference)
    return {name: "bit for bit" if value == 0 else f"no: up to {value:.1e} apart"
            for name, value in worst.items()}


def report(work: Path) -> str:
    booster = models.train_xgb_booster()
    one, hundred = (np.ascontiguousarray(models.rows(n), dtype=np.float32) for n in (1, 100))
    found = candidates(booster, work)[False]
    timing = {name: (cpu_us_per_call(p, one), cpu_us_per_call(p, hundred))
              for name, p in found.items()}
    exact = exactness(work)
    base_one, base_hundred = timing["inplace_predict"]
    lines = [f"Measured {time.strftime('%Y-%m-%d')}: CPU time of one thread per call (best "
             "of 5 batches), the 100-tree `xgb` model, one XGBoost thread.", "",
             "| predictor | 1 row (us) | 100 rows (us) | 1 row vs inplace_predict | "
             "100 rows vs inplace_predict | same numbers as XGBoost |",
             "|---|---|---|---|---|---|"]
    for name, (t1, t100) in timing.items():
        lines.append(f"| {name} | {t1:.0f} | {t100:.0f} | {base_one / t1:.2f}x | "
                     f"{base_hundred / t100:.2f}x | {exact[name]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flask-predict-trees-") as tmp:
        text = report(Path(tmp))
    print(text)
    if not args.no_readme:
        harness.update_readme("trees", text)


if __name__ == "__main__":
    main()
