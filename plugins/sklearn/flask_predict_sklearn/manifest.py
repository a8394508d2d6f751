"""What flask-predict may know about this plugin without importing scikit-learn."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.models.artifacts import PICKLED_FRAMEWORKS, pickled_module
from flask_predict.errors import ConfigError, UnreadableModel
from flask_predict.models.plugins import Manifest

MODEL_FILES = ("model.joblib", "model.pkl")
"""The artifact names Google's scikit-learn runtime loads, in its order."""


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A pickle or joblib file whose first class is not XGBoost's or another framework's
    with its own plugin: probably an estimator (any picklable object could be), so a modest
    confidence."""
    present = [name for name in MODEL_FILES if os.path.isfile(os.path.join(model_dir, name))]
    if not present:
        return 0.0
    if len(present) > 1:
        raise ConfigError(f"several model files in {model_dir!r}: {present}; keep one or set "
                          "'predictor'")
    try:
        module = pickled_module(os.path.join(model_dir, present[0]))
    except UnreadableModel:  # its name says scikit-learn: loading it says what is wrong
        return 0.5
    return 0.0 if module.split(".")[0] in PICKLED_FRAMEWORKS else 0.5


MANIFEST = Manifest(options=frozenset({"outputs"}), detect=detect, shared=True,
                    mlflow_flavors=frozenset({"sklearn"}))
"""Loaded once per machine under gunicorn (docs/scaling.md): the framework survives a fork, and
the sample rows the predictor checks itself on while it loads run on one thread in the master,
which starts no OpenMP pool for a worker to inherit."""
