"""What flask-predict may know about this plugin without importing a user's code."""

from __future__ import annotations

from typing import Any, Mapping

from flask_predict.plugin import ConfigError, Manifest

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


def shared(options: Mapping[str, Any]) -> bool:
    """A class is loaded once per machine only when its model says so (``"shared": true``):
    only its author knows whether it survives a fork (no thread, no TensorFlow)."""
    return options.get(SHARED_OPTION) is True


SHARED_OPTION = "shared"
MANIFEST = Manifest(options=frozenset((*CLASS_OPTIONS, SHARED_OPTION)), detect=detect,
                    shared=shared)
