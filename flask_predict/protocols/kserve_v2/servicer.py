"""The Open Inference Protocol's gRPC API: ``inference.GRPCInferenceService``.

https://github.com/kserve/kserve/blob/master/docs/predict-api/v2/required_api.md

The request is decoded straight from its message (:mod:`.grpc_tensors`: raw contents by
``np.frombuffer``, typed contents from their fields) with the checks and messages of
``POST /v2/models/<m>/infer``. Answers carry ``raw_output_contents``, whatever form the
request came in, as Triton's do (``tritonclient.grpc`` reads nothing else). Errors are ``google.rpc`` status codes as Triton
and KServe map them: ``INVALID_ARGUMENT``, ``NOT_FOUND``, ``UNAVAILABLE``, ``INTERNAL``.

Triton's repository and statistics extensions (``RepositoryIndex``, ``RepositoryModelLoad``,
``RepositoryModelUnload``, ``ModelStatistics``) are the service's operations, translated by
the same functions as their REST routes; load and unload are guarded as admin calls (their
verb is ``admin``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf import json_format

from . import grpc_tensors, lookup, repository_ext, requested, statistics, wire
from ...request.record import current_request
from ...errors import InvalidInput
from ...grpc.messages import v2
from .classification import classify

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ...core.state import PredictState


class InferenceServicer:
    """Health, metadata and ``ModelInfer`` over this worker's models."""

    def __init__(self, state: PredictState) -> None:
        self.state = state
        self.service = state.service
        self.server_name = state.settings.process.server_name

    def ServerLive(self, request: Any) -> Any:
        return v2.ServerLiveResponse(live=True)

    def ServerReady(self, request: Any) -> Any:
        self.service.check_configured()  # no model configured: UNAVAILABLE saying how
        return v2.ServerReadyResponse(ready=self.service.ready)

    def ModelReady(self, request: Any) -> Any:
        return v2.ModelReadyResponse(ready=lookup.version_ready(self.service, request.name,
                                                                request.version))

    def ServerMetadata(self, request: Any) -> Any:
        body = wire.server_metadata(self.server_name, wire.server_version(),
                                    repository_ext.extensions(self.service))
        return json_format.ParseDict(body, v2.ServerMetadataResponse())

    def ModelMetadata(self, request: Any) -> Any:
        with lookup.serving(self.service, request.name, request.version) as loaded:
            body = wire.model_metadata(self.service.model(request.name), loaded)
        return json_format.ParseDict(body, v2.ModelMetadataResponse())

    def ModelInfer(self, request: Any) -> Any:
        with lookup.serving(self.service, request.model_name,
                            request.model_version) as loaded:
            decoded = grpc_tensors.decode_request(request, str(loaded.version),
                                                  loaded.metadata.signature,
                                                  self.state.settings.limits)
            if (record := current_request.get()) is not None:
                record.adopt_id(request.id or None)  # the message's id names it in the log
            ask, asked = requested.resolve(decoded.request, loaded.metadata.signature,
                                           request.model_name)
            result = requested.answering(self.service.predict(loaded, ask), asked)
            classification = decoded.options.classification
            labels = loaded.metadata.properties.get("classes") if classification else None

        outputs = {}
        for name, array in result.outputs.items():
            count = classification.get(name)
            outputs[name] = np.asarray(array) if count is None else classify(
                np.asarray(array), count, labels, name)
        return grpc_tensors.infer_response(result.model, str(result.version), request.id,
                                           outputs)

    # --- extensions --------------------------------------------------------------------------

    def ModelStatistics(self, request: Any) -> Any:
        body = statistics.model_stats(lookup.statistics(self.service, request.name or None,
                                                        request.version or None))
        return json_format.ParseDict(body, v2.ModelStatisticsResponse())

    def RepositoryIndex(self, request: Any) -> Any:
        _one_repository(request)
        models = repository_ext.index(self.service, request.ready)
        return json_format.ParseDict({"models": models}, v2.RepositoryIndexResponse())

    def RepositoryModelLoad(self, request: Any) -> Any:
        _one_repository(request)
        repository_ext.check_parameters(request.parameters)
        self.service.load(request.model_name)
        return v2.RepositoryModelLoadResponse()

    def RepositoryModelUnload(self, request: Any) -> Any:
        _one_repository(request)
        repository_ext.check_parameters(request.parameters)
        self.service.unload(request.model_name)
        return v2.RepositoryModelUnloadResponse()


def _one_repository(request: Any) -> None:
    """This server has one model repository, which has no name."""
    if request.repository_name:
        raise InvalidInput(f"unknown repository {request.repository_name!r}: this server "
                           "has one model repository; leave repository_name empty")
