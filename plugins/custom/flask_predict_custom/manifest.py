"""What flask-predict may know about this plugin without importing a user's code."""

from __future__ import annotations

from typing import Any, Mapping

from flask_predict.errors import ConfigError
from flask_predict.plugins import Manifest

from .discovery import routine_classes
from .routine import CLASS_OPTIONS


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A model whose settings name a prediction class is certainly a custom one, whatever
    artifact files sit beside the code; a folder whose source defines one routine class
    (read, not run) almost certainly, above the frameworks' own files (Google's tutorials
    ship ``model.joblib`` beside ``predictor.py``)."""
    if any(options.get(key) for key in CLASS_OPTIONS):
        return 1.0
    found = routine_classes(model_dir)
    if len(found) > 1:
        raise ConfigError(f"{model_dir!r} defines several prediction classes {found}; set "
                          "'class' in the model config")
    return 0.95 if found else 0.0


MANIFEST = Manifest(options=frozenset(CLASS_OPTIONS), detect=detect)
