"""flask-predict: serve machine-learning models from Flask over AI Platform, TF Serving,
Open Inference Protocol V2 and grps."""

from __future__ import annotations

from .errors import (ConfigError, FailedPrecondition, InvalidInput, ModelNotFound,
                     ModelNotReady, PredictError, PredictorFailed, PredictorNotFound)
from .extension import FlaskPredict, close_app, get_state
from .predictor import Predictor
from .types import ModelMetadata, Signature, TensorSpec

__all__ = [
    "ConfigError", "FailedPrecondition", "FlaskPredict", "InvalidInput", "ModelMetadata",
    "ModelNotFound", "ModelNotReady", "PredictError", "Predictor", "PredictorFailed",
    "PredictorNotFound", "Signature", "TensorSpec", "close_app", "get_state",
]
