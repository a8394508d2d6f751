"""Real models trained by the tests (never committed): scikit-learn, XGBoost, custom.

The scikit-learn and XGBoost trainers are the demo's own; the custom echo predictor is
the tests' (it reports its keyword arguments, can fail on request and tells its pid).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from flask_predict.demo import train_iris, train_xgboost_missing

__all__ = ["train_iris", "train_xgboost_missing", "make_custom", "model_config"]

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


def model_config(root: Path) -> dict[str, dict[str, object]]:
    """``PREDICT_MODELS`` for the three models trained under *root*."""
    return {
        "iris": {"base_path": os.fspath(root / "iris")},
        "xgb": {"base_path": os.fspath(root / "xgb")},
        "echo": {"base_path": os.fspath(root / "echo"), "predictor": "custom",
                 "class": "predictor.EchoPredictor"},
    }
