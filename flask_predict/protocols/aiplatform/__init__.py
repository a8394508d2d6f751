"""Google AI Platform Prediction (``ml v1``) and Vertex AI (``aiplatform v1``) prediction.

https://cloud.google.com/ai-platform/prediction/docs/reference/rest/v1/projects/predict
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.endpoints/predict

Views live in :mod:`.ml` (AI Platform) and :mod:`.vertex` (Vertex AI's endpoints and custom
container routes); the request body both share in :mod:`.instances`; Google's error envelope
in :mod:`.envelope`. Query parameters such as ``?alt=json`` are ignored.
"""

from __future__ import annotations

from . import ml, vertex
from .blueprint import bp
from .instances import decode_predict, decode_vertex

__all__ = ["bp", "decode_predict", "decode_vertex", "ml", "vertex"]
