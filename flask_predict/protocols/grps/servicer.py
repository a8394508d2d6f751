"""grps's gRPC API: ``grps.protos.v1.GrpsService``.

https://github.com/NetEase-Media/grps/blob/master/docs/2_Interface.md

grps defines its HTTP JSON as protobuf's JSON form of ``GrpsMessage``, so both transports
answer the same messages, errors included (a ``FAILURE`` status in the message, gRPC status
``OK``, as grps does): :mod:`.grpc_messages` reads a message's tensors and builds the
answers with the ``/grps/v1`` codec's checks and values. The online/offline switch is the
one the HTTP routes and every worker share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from . import dispatch, wire
from ...grpc.handlers import as_error
from ...grpc.messages import grps
from ...models.served import LoadedVersion
from .grpc_messages import answer, failure, to_request

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ...core.state import PredictState

SERVICE = "grps.protos.v1.GrpsService"


def _failure(exc: Exception, method: str) -> Any:
    error = as_error(exc, f"/{SERVICE}/{method}")
    return failure(error.http_status, error.message)


class GrpsServicer:
    """Every rpc of ``GrpsService``; each answers a message, failures included."""

    def __init__(self, state: PredictState) -> None:
        self.state = state

    def ready(self) -> bool:
        """grps readiness (the health service's status of this service)."""
        return dispatch.is_ready(self.state)

    def _ok(self) -> Any:
        return grps.GrpsMessage(status=wire.OK_STATUS)

    def Online(self, request: Any) -> Any:
        self.state.service.set_online(True)
        return self._ok()

    def Offline(self, request: Any) -> Any:
        self.state.service.set_online(False)
        return self._ok()

    def CheckLiveness(self, request: Any) -> Any:
        return self._ok()

    def CheckReadiness(self, request: Any) -> Any:
        reason = dispatch.unready_reason(self.state)
        if reason is None:
            return self._ok()
        return failure(503, reason)

    def ServerMetadata(self, request: Any) -> Any:
        try:
            return answer("str_data", dispatch.server_metadata(self.state))
        except Exception as exc:
            return _failure(exc, "ServerMetadata")

    def ModelMetadata(self, request: Any) -> Any:
        try:
            return answer("str_data", dispatch.model_metadata(self.state, request.str_data))
        except Exception as exc:
            return _failure(exc, "ModelMetadata")

    @staticmethod
    def answer_status(answer: Any) -> int:
        """An answer's status (its envelope's code): grps answers failures in OK messages."""
        return int(answer.status.code) or 200

    def _held(self, request: Any) -> tuple[wire.GrpsRequest, LoadedVersion]:
        """The message of a predict call and the version it names, held (the caller
        releases it); limits checked as over HTTP (413 in the envelope)."""
        message = to_request(request)
        dispatch.check_limits(self.state, message)
        return message, dispatch.acquire_model(
            self.state, message.model or dispatch.default_model(self.state))

    def Predict(self, request: Any) -> Any:
        try:
            message, loaded = self._held(request)
            try:
                return answer(*dispatch.predict(self.state, loaded, message))
            finally:
                loaded.release()
        except Exception as exc:
            return _failure(exc, "Predict")

    def PredictStreaming(self, request: Any) -> Iterator[Any]:
        """One message per item the model streams, the version held until the last; a
        failure ends the stream with a ``FAILURE`` message."""
        try:
            message, loaded = self._held(request)
            try:
                for kind, value in dispatch.predict_stream(self.state, loaded, message):
                    yield answer(kind, value)
            finally:
                loaded.release()
        except Exception as exc:
            yield _failure(exc, "PredictStreaming")
