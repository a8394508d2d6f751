"""TensorFlow predictor plugin for flask-predict.

The predictor (:mod:`.predictor`) imports TensorFlow; this package imports nothing heavy, so
the gunicorn master can read the plugin's manifest (:mod:`.manifest`) without loading
TensorFlow, and it loads only in the workers that serve such a model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .predictor import TensorFlowPredictor

__all__ = ["TensorFlowPredictor"]


def __getattr__(name: str) -> Any:
    """Names of :mod:`.predictor`, imported on first use."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(import_module(f"{__name__}.predictor"), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
