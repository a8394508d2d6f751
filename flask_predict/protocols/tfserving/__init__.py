"""TensorFlow Serving's REST API (``/v1/models/...``) for every framework.

https://github.com/tensorflow/serving/blob/master/tensorflow_serving/g3doc/api_rest.md

Views live in :mod:`.views`, request and response bodies in :mod:`.wire`.
"""

from __future__ import annotations

from .views import bp

__all__ = ["bp"]
