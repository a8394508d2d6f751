"""What flask-predict may know about this plugin without importing a user's code."""

from __future__ import annotations

from typing import Any, Mapping

from flask_predict.plugins import Manifest

CLASS_OPTIONS = ("class", "prediction_class")


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A model whose settings name a prediction class is certainly a custom one, whatever
    artifact files sit beside the code."""
    return 1.0 if any(options.get(key) for key in CLASS_OPTIONS) else 0.0


MANIFEST = Manifest(options=frozenset(CLASS_OPTIONS), detect=detect)
