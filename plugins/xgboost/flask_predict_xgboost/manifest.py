"""What flask-predict may know about this plugin without importing XGBoost."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.models.artifacts import pickled_module
from flask_predict.errors import UnreadableModel
from flask_predict.models.plugins import Manifest

NATIVE_FILES = ("model.bst", "model.json", "model.ubj")
PICKLE_FILES = ("model.joblib", "model.pkl")


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """XGBoost's own formats, or a pickle whose first class comes from ``xgboost``."""
    if any(os.path.isfile(os.path.join(model_dir, name)) for name in NATIVE_FILES):
        return 0.9
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        try:
            if os.path.isfile(path) and pickled_module(path).split(".")[0] == "xgboost":
                return 0.9
        except UnreadableModel:  # scikit-learn's by its name, and it says what is wrong
            return 0.0
    return 0.0


MANIFEST = Manifest(options=frozenset({"outputs", "nthread"}), detect=detect, shared=True,
                    mlflow_flavors=frozenset({"xgboost"}))
"""Loaded once per machine under gunicorn (docs/scaling.md): the framework survives a fork, and
the sample rows the predictor checks itself on while it loads run on one thread in the master,
which starts no OpenMP pool for a worker to inherit."""
