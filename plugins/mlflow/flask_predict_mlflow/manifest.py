"""What flask-predict may know about the ``mlflow`` plugin without importing mlflow.

It detects nothing by itself: an MLflow folder is told apart by its ``MLmodel`` file, and
:func:`flask_predict.models.plugins.detect_predictor` gives it to this plugin when no
installed plugin loads one of its flavors natively (:mod:`flask_predict.models.mlmodel`).
"""

from __future__ import annotations

from flask_predict.models.plugins import Manifest

MANIFEST = Manifest(options=frozenset(), detect=None, shared=False)
"""Not shared: a ``python_function`` model may hold any framework, which may not survive a
fork; each worker loads its own copy."""
