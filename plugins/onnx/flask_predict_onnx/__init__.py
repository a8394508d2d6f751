"""ONNX Runtime predictor plugin for flask-predict.

The predictor (:mod:`.predictor`) imports ONNX Runtime; this package imports nothing heavy, so
the gunicorn master can read the plugin's manifest (:mod:`.manifest`) without loading
ONNX Runtime, and it loads only in the processes that serve such a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask_predict.plugin import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .predictor import ONNXPredictor

__all__ = ["ONNXPredictor"]


__getattr__ = lazy_attributes(__name__)
