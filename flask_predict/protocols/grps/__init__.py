"""grps's interface (``/grps/v1`` and ``grps.protos.v1.GrpsService``): ``GrpsMessage`` JSON
and octet-stream bodies over HTTP, the same messages over gRPC.

https://github.com/NetEase-Media/grps/blob/master/docs/2_Interface.md

:mod:`.wire` decodes and encodes messages; :mod:`.dispatch` is what both transports share;
:mod:`.views` holds the blueprint, :mod:`.servicer` the gRPC service. The online/offline
switch is the server's (:meth:`flask_predict.core.service.ModelService.set_online`), shared by
every worker.
"""

from __future__ import annotations

from ...request.descriptor import Protocol, TryRequest
from .settings import SECTION

PROTOCOL = Protocol(
    name="grps",
    title="grps",
    blueprint=f"{__name__}.views:bp",
    verbs={"predict": "predict", "live": "health", "ready": "health",
           "server_metadata": "metadata", "model_metadata": "metadata",
           "online": "admin", "offline": "admin", "monitor_metrics": "monitor",
           "monitor_series": "monitor", "unknown_path": "unknown"},
    rpc_verbs={"Predict": "predict", "PredictStreaming": "predict", "Online": "admin",
               "Offline": "admin", "CheckLiveness": "health", "CheckReadiness": "health",
               "ServerMetadata": "metadata", "ModelMetadata": "metadata"},
    services={"grps.protos.v1.GrpsService": f"{__name__}.servicer:GrpsServicer"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
    try_request=TryRequest("/grps/v1/infer/predict", {"model": "$model", "ndarray": "$rows"}),
)
