"""Google AI Platform Prediction (``ml v1``) and Vertex AI (``aiplatform v1``) prediction.

https://cloud.google.com/ai-platform/prediction/docs/reference/rest/v1/projects/predict
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.endpoints/predict

Views live in :mod:`.ml` (AI Platform) and :mod:`.vertex` (Vertex AI's endpoints and custom
container routes), gathered by :mod:`.views`; the request body both share in
:mod:`.instances`; Google's error envelope in :mod:`.envelope`. Query parameters such as
``?alt=json`` are ignored. No gRPC API: Google's prediction APIs are REST (their gRPC
surface is Google's own front end, not a model server's).
"""

from __future__ import annotations

from ...request.descriptor import Protocol, TryRequest
from .settings import SECTION

PROTOCOL = Protocol(
    name="aiplatform",
    title="AI Platform and Vertex AI",
    blueprint=f"{__name__}.views:bp",
    verbs={"predict": "predict", "vertex_predict": "predict", "endpoint_predict": "predict",
           "endpoint_raw_predict": "predict", "explain": "explain",
           "endpoint_explain": "explain", "describe": "metadata",
           "vertex_health": "health", "unknown_path": "unknown"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
    try_request=TryRequest("/v1/projects/status-page/models/{model}:predict",
                           {"instances": "$rows"}),
)
