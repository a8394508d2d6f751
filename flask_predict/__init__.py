"""flask-predict: serve machine-learning models from Flask over AI Platform, TF Serving,
Open Inference Protocol V2 and grps.

The predictor contract (:class:`Predictor`, the types and errors) imports no Flask, so a
plugin works wherever numpy does; the Flask extension is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (ConfigError, FailedPrecondition, InvalidInput, ModelNotFound,
                     ModelNotReady, PredictError, PredictorFailed, PredictorNotFound)
from .explanation import Explanation
from .predictor import Predictor
from .types import ModelMetadata, Signature, TensorSpec

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .extension import FlaskPredict, close_app, get_state

__all__ = [
    "ConfigError", "Explanation", "FailedPrecondition", "FlaskPredict", "InvalidInput", "ModelMetadata",
    "ModelNotFound", "ModelNotReady", "PredictError", "Predictor", "PredictorFailed",
    "PredictorNotFound", "Signature", "TensorSpec", "close_app", "get_state",
]

_FLASK_SIDE = ("FlaskPredict", "close_app", "get_state")


def __getattr__(name: str) -> Any:
    """``FlaskPredict``, ``close_app`` and ``get_state`` import Flask only when asked for."""
    if name in _FLASK_SIDE:
        from . import extension

        return getattr(extension, name)
    raise AttributeError(f"module 'flask_predict' has no attribute {name!r}")
