"""The benchmark's two models and the request bodies every route and peer receives.

``lr``: a 20-feature LogisticRegression (``lr/1/model.joblib``); ``xgb``: a 100-tree XGBoost
Booster, ``binary:logistic``, depth 6 (``xgb/1/model.json``). Rows are normal random numbers
printed with 6 decimals, as a client would print them; the same rows in every format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

FEATURES = 20


def training_data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=2000, n_features=FEATURES, random_state=0)
    return x, y


def train_xgb_booster() -> Any:
    import xgboost as xgb

    x, y = training_data()
    return xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": 1},
                     xgb.DMatrix(x, label=y), num_boost_round=100)


def train(root: Path) -> Path:
    """``root/lr/1/model.joblib`` and ``root/xgb/1/model.json``; returns *root*."""
    import joblib
    from sklearn.linear_model import LogisticRegression

    (root / "lr" / "1").mkdir(parents=True)
    joblib.dump(LogisticRegression(max_iter=1000).fit(*training_data()),
                root / "lr" / "1" / "model.joblib")
    (root / "xgb" / "1").mkdir(parents=True)
    train_xgb_booster().save_model(root / "xgb" / "1" / "model.json")
    return root


def rows(count: int) -> np.ndarray:
    """*count* rows of random features, the same for a given count."""
    return np.random.default_rng(count).normal(size=(count, FEATURES))


def _matrix(values: np.ndarray) -> str:
    return "[" + ",".join("[" + ",".join(f"{v:.6f}" for v in row) + "]"
                          for row in values) + "]"


def instances(values: np.ndarray) -> bytes:
    """AI Platform, TF Serving and KServe V1: ``{"instances": [[...], ...]}``."""
    return b'{"instances":' + _matrix(values).encode() + b"}"


def v2_json(values: np.ndarray, output: str | None = "predict") -> bytes:
    """Open Inference Protocol V2, flat ``data``, asking for the *output* (``None``: the
    server's default outputs)."""
    flat = ",".join(f"{v:.6f}" for v in values.ravel())
    head = json.dumps({"name": "input-0", "datatype": "FP64", "shape": list(values.shape)})
    outputs = ',"outputs":[{"name":"%s"}]' % output if output else ""
    return ('{"inputs":[%s,"data":[%s]}]%s}' % (head[:-1], flat, outputs)).encode()


def grps_ndarray(values: np.ndarray) -> bytes:
    """grps ``{"ndarray": [[...], ...]}``."""
    return b'{"ndarray":' + _matrix(values).encode() + b"}"


BODIES: dict[str, Callable[[np.ndarray], bytes]] = {
    "instances": instances, "v2": v2_json, "grps": grps_ndarray,
    # KServe refuses to be asked for "predict": its one output (the model's predict) is
    # "output-0"
    "v2 default outputs": lambda values: v2_json(values, None)}
"""Body format name -> writer."""


def write_bodies(folder: Path, counts: tuple[int, ...]) -> dict[tuple[str, int], Path]:
    """One body file per (format, row count) under *folder*."""
    found = {}
    for count in counts:
        values = rows(count)
        for name, writer in BODIES.items():
            path = folder / f"{name.replace(' ', '-')}-{count}.json"
            path.write_bytes(writer(values))
            found[name, count] = path
    return found
