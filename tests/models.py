"""Real models trained by the tests (never committed): scikit-learn, XGBoost, custom.

The scikit-learn and XGBoost trainers are the demo's own; the custom echo predictor is
the tests' (it reports its keyword arguments, can fail on request and tells its pid).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from flask_predict.models.demo import train_iris, train_xgboost_missing

__all__ = ["train_iris", "train_xgboost_missing", "make_custom", "make_explaining",
           "make_sleepy", "sleepy_config", "model_config", "make_unreadable", "UNREADABLE"]

CUSTOM_PREDICTOR = '''
"""A custom prediction routine as AI Platform users write them."""
import json
import os


class EchoPredictor:
    def __init__(self, scale):
        self.scale = scale

    @classmethod
    def from_path(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            return cls(json.load(f)["scale"])

    def predict(self, instances, **kwargs):
        parameters = kwargs.get("parameters")  # Vertex AI's request parameters
        if kwargs.get("fail") or (isinstance(parameters, dict) and parameters.get("fail")):
            raise RuntimeError("asked to fail")
        if kwargs.get("whoami"):
            return [os.getpid() for _ in instances]
        return [{"instance": inst, "scaled": _scale(inst, self.scale), "kwargs": kwargs}
                for inst in instances]


def _scale(value, factor):
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        return None
    if isinstance(value, list):
        return [_scale(v, factor) for v in value]
    return value * factor
'''


def make_custom(base: Path, version: int = 1, scale: float = 2.0) -> Path:
    """A custom predictor shipped inside the version folder, as AI Platform packages it."""
    folder = base / str(version)
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(textwrap.dedent(CUSTOM_PREDICTOR))
    (folder / "config.json").write_text('{"scale": %s}' % scale)
    return base


EXPLAINING_PREDICTOR = '''
"""A routine that explains itself: a weighted sum of named numbers."""
import time

import numpy as np

from flask_predict import Explanation

WEIGHTS = {"rooms": 30.0, "age": -0.5}
BASE = 100.0


class HousePrice:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, **kwargs):
        return [BASE + sum(w * row[name] for name, w in WEIGHTS.items()) for row in instances]

    def explain(self, instances, scale=1.0, sleep=0.0, fail=False):
        time.sleep(sleep)
        if fail:
            raise RuntimeError("asked to fail")
        columns = {name: np.array([[row[name] * w * scale] for row in instances])
                   for name, w in WEIGHTS.items()}
        baseline = np.full((len(instances), 1), BASE * scale)
        output = baseline + sum(columns.values())
        return Explanation(columns, baseline, output, "price", ("price",))
'''


def make_explaining(base: Path) -> Path:
    """A custom routine with its own ``explain``: price = 100 + 30 rooms - 0.5 age. Its
    keywords: ``scale`` multiplies the explanation, ``sleep`` waits first, ``fail`` raises."""
    folder = base / "1"
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(textwrap.dedent(EXPLAINING_PREDICTOR))
    return base


SLEEPY_PREDICTOR = '''
"""A custom predictor that takes its time: to load (config.json's "load_seconds") and to
predict (an instance {"sleep": s} or [s, 0] sleeps, {"spin": s} or [0, s] loops in Python,
for s seconds). It
answers each instance with its worker's pid; with {"swallow": true} it catches Exception."""
import json
import os
import time


class SleepyPredictor:
    @classmethod
    def from_path(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            time.sleep(json.load(f)["load_seconds"])
        return cls()

    def predict(self, instances, **kwargs):
        try:
            for inst in instances:
                if not isinstance(inst, dict):  # a row [sleep, spin]: a list, or numpy
                    values = [float(v) for v in __import__("numpy").ravel(inst)]  # via grps
                    inst = dict(zip(["sleep", "spin"], values))
                time.sleep(inst.get("sleep", 0))
                end = time.monotonic() + inst.get("spin", 0)
                while time.monotonic() < end:
                    pass
        except Exception:
            if not kwargs.get("swallow"):
                raise
            return ["swallowed" for _ in instances]
        return [os.getpid() for _ in instances]
'''


def make_sleepy(base: Path, load_seconds: float = 0.0) -> Path:
    """The sleepy custom predictor in version 1 of *base* (class ``predictor.SleepyPredictor``)."""
    folder = base / "1"
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(textwrap.dedent(SLEEPY_PREDICTOR))
    (folder / "config.json").write_text('{"load_seconds": %s}' % load_seconds)
    return base


def sleepy_config(base: Path, **entry: object) -> dict[str, object]:
    """The model config entry for :func:`make_sleepy`'s model in *base*."""
    return {"base_path": os.fspath(base), "predictor": "custom",
            "class": "predictor.SleepyPredictor", **entry}


def model_config(root: Path) -> dict[str, dict[str, object]]:
    """``PREDICT_MODELS`` for the three models trained under *root*."""
    return {
        "iris": {"base_path": os.fspath(root / "iris")},
        "xgb": {"base_path": os.fspath(root / "xgb")},
        "echo": {"base_path": os.fspath(root / "echo"), "predictor": "custom",
                 "class": "predictor.EchoPredictor"},
    }


UNREADABLE = "unreadable model file: "
"""How every plugin begins saying that a model file cannot be read."""


def make_unreadable(root: Path, tensorflow: bool = False) -> dict[str, tuple[Path, str]]:
    """One model per kind of unreadable file under *root*, cut from real models the tests
    train: model name -> (its file, what the load says of it after :data:`UNREADABLE`).
    With *tensorflow*, a SavedModel whose ``saved_model.pb`` is not one too."""
    iris = train_iris(root / ".iris") / "1" / "model.joblib"
    booster = train_xgboost_missing(root / ".loans", fmt="ubj") / "1" / "model.ubj"
    whole = iris.read_bytes()
    kinds = {
        "garbage_joblib": ("model.joblib", b"not a pickle at all\n" * 4, "cannot unpickle"),
        "truncated_joblib": ("model.joblib", whole[:len(whole) // 2], "cut short"),
        "truncated_pickle": ("model.pkl", whole[:len(whole) // 3], "cut short"),
        "empty_joblib": ("model.joblib", b"", "the file is empty"),
        "garbage_json": ("model.json", b'{"learner": {"broken', "not an XGBoost model"),
        "truncated_ubj": ("model.ubj", booster.read_bytes()[:200], "not an XGBoost model"),
        "empty_json": ("model.json", b"", "the file is empty"),
    }
    if tensorflow:
        kinds["garbage_savedmodel"] = ("saved_model.pb", b"\x08\x01garbage", "not a SavedModel")
    made = {}
    for name, (file, data, why) in kinds.items():
        folder = root / name / "1"
        folder.mkdir(parents=True)
        (folder / file).write_bytes(data)
        made[name] = (folder / file, why)
    return made
