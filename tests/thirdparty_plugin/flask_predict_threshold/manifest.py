"""What flask-predict may know without importing the predictor: the folders it takes."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.plugin import Manifest


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    return 0.9 if os.path.isfile(os.path.join(model_dir, "threshold.json")) else 0.0


MANIFEST = Manifest(options=frozenset(), detect=detect)
