"""Open Inference Protocol V2 (KServe, Triton, MLServer) over HTTP/REST, with Triton's
binary tensor data extension, and over gRPC (``inference.GRPCInferenceService``).

https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md

:mod:`.wire` holds the pure encode/decode functions, :mod:`.views` the blueprint,
:mod:`.servicer` the gRPC service.
"""

from __future__ import annotations

from ...request.descriptor import Protocol, TryRequest
from .settings import SECTION

PROTOCOL = Protocol(
    name="kserve_v2",
    title="Open Inference Protocol V2",
    blueprint=f"{__name__}.views:bp",
    verbs={"infer": "predict", "live": "health", "ready": "health", "model_ready": "health",
           "server_metadata": "metadata", "model_metadata": "metadata",
           "repository_index": "metadata", "repository_control": "admin",
           "model_statistics": "monitor", "unknown_path": "unknown"},
    rpc_verbs={"ModelInfer": "predict", "ServerLive": "health", "ServerReady": "health",
               "ModelReady": "health", "ServerMetadata": "metadata", "ModelMetadata": "metadata",
               "RepositoryIndex": "metadata", "RepositoryModelLoad": "admin",
               "RepositoryModelUnload": "admin", "ModelStatistics": "monitor"},
    services={"inference.GRPCInferenceService": f"{__name__}.servicer:InferenceServicer"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
    try_request=TryRequest("/v2/models/{model}/infer", {"inputs": [{
        "name": "$input", "shape": "$shape", "datatype": "$datatype", "data": "$flat"}]}),
)
