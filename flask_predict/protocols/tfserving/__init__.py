"""TensorFlow Serving's REST API (``/v1/models/...``) and gRPC API
(``tensorflow.serving.PredictionService`` and ``ModelService``) for every framework.

https://github.com/tensorflow/serving/blob/master/tensorflow_serving/g3doc/api_rest.md

Views live in :mod:`.views`, request and response bodies in :mod:`.wire`, the gRPC services
in :mod:`.servicer`.
"""

from __future__ import annotations

from ...request.descriptor import Protocol, TryRequest
from .settings import SECTION

PROTOCOL = Protocol(
    name="tfserving",
    title="TF Serving",
    blueprint=f"{__name__}.views:bp",
    verbs={"predict": "predict", "classify": "classify", "regress": "regress",
           "explain": "explain",  # KServe V1's verb on TF Serving's paths
           "model_status": "status", "model_metadata": "metadata",
           # TF Serving's other spellings of its paths and methods, matched by its own rules
           "dispatch": "other"},
    rpc_verbs={"Predict": "predict", "Classify": "classify", "Regress": "regress",
               "MultiInference": "predict", "GetModelMetadata": "metadata",
               "GetModelStatus": "status"},
    services={
        "tensorflow.serving.PredictionService": f"{__name__}.servicer:PredictionServicer",
        "tensorflow.serving.ModelService": f"{__name__}.servicer:ModelServicer"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
    try_request=TryRequest("/v1/models/{model}:predict", {"instances": "$rows"}),
)
