"""scikit-learn predictor plugin for flask-predict.

The predictor (:mod:`.predictor`) imports scikit-learn; this package imports nothing heavy, so
the gunicorn master can read the plugin's manifest (:mod:`.manifest`) without loading
scikit-learn, and it loads only in the workers that serve such a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask_predict.models.plugins import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .predictor import SklearnPredictor, is_linear_classifier

__all__ = ["SklearnPredictor", "is_linear_classifier"]


__getattr__ = lazy_attributes(__name__)
