"""What flask-predict may know about this plugin without importing TensorFlow."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.plugins import Manifest

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A SavedModel folder."""
    found = any(os.path.isfile(os.path.join(model_dir, name)) for name in SAVED_MODEL_FILES)
    return 0.9 if found else 0.0


MANIFEST = Manifest(options=frozenset({"tags", "signature"}), detect=detect)
