"""TensorFlow predictor plugin for flask-predict: SavedModels and Keras files.

The predictor (:mod:`.predictor`) imports TensorFlow; this package imports nothing heavy, so
the gunicorn master can read the plugin's manifest (:mod:`.manifest`) without loading
TensorFlow, and it loads only in the workers that serve such a model. Importing the package
sets TensorFlow's C++ log level first (:mod:`.environment`), so every path to TensorFlow
through the plugin finds it set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask_predict.models.plugins import lazy_attributes

from .environment import quiet_native_logs

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .predictor import TensorFlowPredictor
    from .tensors import datatype

__all__ = ["TensorFlowPredictor", "datatype"]

quiet_native_logs()

__getattr__ = lazy_attributes(__name__)
