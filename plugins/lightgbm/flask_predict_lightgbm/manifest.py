"""What flask-predict may know about this plugin without importing LightGBM."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.models.artifacts import pickled_module
from flask_predict.models.plugins import Manifest

TEXT_FILES = ("model.txt", "model.lgb", "model.bst")
"""``Booster.save_model`` files: ``model.txt`` as LightGBM's documentation names it,
``model.bst`` as KServe's LightGBM server does (XGBoost's name too: the content decides)."""
PICKLE_FILES = ("model.joblib", "model.pkl")
TEXT_HEAD = b"tree\n"
"""How every model file ``Booster.save_model`` writes begins."""


def is_lightgbm_text(path: str) -> bool:
    """Whether *path* is a model file as ``Booster.save_model`` writes it."""
    try:
        with open(path, "rb") as file:
            return file.read(len(TEXT_HEAD)) == TEXT_HEAD
    except OSError:
        return False


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A LightGBM text model (read from its first line: above XGBoost's claim on
    ``model.bst``), or a pickle whose first class comes from ``lightgbm``."""
    if any(is_lightgbm_text(os.path.join(model_dir, name)) for name in TEXT_FILES):
        return 0.95
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path) and pickled_module(path).split(".")[0] == "lightgbm":
            return 0.9
    return 0.0


MANIFEST = Manifest(options=frozenset({"outputs", "num_threads"}), detect=detect, shared=True,
                    mlflow_flavors=frozenset({"lightgbm"}))
"""Loaded once per machine under gunicorn (docs/scaling.md): LightGBM survives a fork, and the
master loads and checks a model with OpenMP held to one thread, so no pool is inherited;
each worker sets its own thread count in ``after_fork``."""
