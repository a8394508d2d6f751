"""What flask-predict may know about this plugin without importing CatBoost."""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from flask_predict.models.artifacts import pickled_module
from flask_predict.models.plugins import Manifest

NATIVE_FILE = "model.cbm"
"""``save_model``'s own format (every model, text features included)."""
JSON_FILE = "model.json"
"""``save_model(format="json")``; XGBoost's name too: the file's first key decides."""
PICKLE_FILES = ("model.joblib", "model.pkl")
JSON_KEYS = {"ctr_data", "features_info", "model_info", "oblivious_trees", "scale_and_bias"}
"""The keys a CatBoost JSON model begins with (XGBoost's begins with ``learner``)."""
FIRST_KEY = re.compile(rb'^\s*\{\s*"([a-z_]+)"')


def is_catboost_json(path: str) -> bool:
    """Whether *path* is a model file as CatBoost's ``save_model(format="json")`` writes it."""
    try:
        with open(path, "rb") as file:
            found = FIRST_KEY.match(file.read(256))
    except OSError:
        return False
    return found is not None and found.group(1).decode() in JSON_KEYS


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """``model.cbm``, a CatBoost JSON model (above XGBoost's claim on ``model.json``), or a
    pickle whose first class comes from ``catboost``."""
    if os.path.isfile(os.path.join(model_dir, NATIVE_FILE)):
        return 0.9
    if is_catboost_json(os.path.join(model_dir, JSON_FILE)):
        return 0.95
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path) and pickled_module(path).split(".")[0] == "catboost":
            return 0.9
    return 0.0


MANIFEST = Manifest(options=frozenset({"outputs", "thread_count"}), detect=detect, shared=True,
                    mlflow_flavors=frozenset({"catboost"}))
"""Loaded once per machine under gunicorn (docs/scaling.md). Measured: a process forked after
its parent had trained and predicted with CatBoost on 4 threads (its pool's threads alive)
predicts on 1, 2 and 4 threads without hanging; each worker sets its own ``thread_count`` in
``after_fork``."""
