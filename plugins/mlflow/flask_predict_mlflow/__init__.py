"""MLflow ``python_function`` predictor plugin for flask-predict.

An MLflow model folder whose flavors no other installed plugin loads natively (a custom
``PythonModel``, a flavor we do not serve), or a model whose settings name this plugin
(``"predictor": "mlflow"``), is loaded by ``mlflow.pyfunc.load_model`` (:mod:`.predictor`).
This package imports nothing heavy: the manifest (:mod:`.manifest`) is read without mlflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask_predict.models.plugins import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .predictor import PyfuncPredictor

__all__ = ["PyfuncPredictor"]


__getattr__ = lazy_attributes(__name__)
