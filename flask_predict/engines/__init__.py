"""The same predictors on Spark, Ray and Dask: each engine's helper runs a model folder,
loaded once per executor process, on the engine's pandas batches. Each helper module imports
its engine, and only it: ``flask_predict.engines.spark`` (``pip install
"flask-predict[spark]"``), ``.ray_data`` and ``.ray_serve`` (``[ray]``), ``.dask_frames``
(``[dask]``)."""

from __future__ import annotations

from .partitions import ModelRef, score

__all__ = ["ModelRef", "score"]
