"""The Python API: a model folder loaded as the server loads it, asked in this process.

.. code-block:: python

    from flask_predict.api import Model

    with Model.load("models/churn") as model:
        outputs = model.predict(frame)                  # {"predict": array([...]), ...}
        predictions = model.predict_instances(rows)     # AI Platform's "predictions"
"""

from __future__ import annotations

from .model import Model, model_base_path, model_name

__all__ = ["Model", "model_base_path", "model_name"]
