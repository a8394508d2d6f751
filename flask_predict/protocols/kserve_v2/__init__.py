"""Open Inference Protocol V2 (KServe, Triton, MLServer) over HTTP/REST, with Triton's
binary tensor data extension.

https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md

``views`` holds the blueprint and its routes, ``wire`` the pure encode/decode functions.
"""

from __future__ import annotations

from .views import bp

__all__ = ["bp"]
