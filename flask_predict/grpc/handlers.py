"""Servicer objects -> gRPC method handlers, and errors -> gRPC status codes.

A servicer is a plain object with one method per rpc of its service, taking the request
message and returning the answer (or yielding answers, for a server-streaming rpc). The
handlers built here deserialize with the classes of :mod:`.messages`, turn any
:class:`~flask_predict.errors.PredictError` into its status code and message, and turn
anything else into ``INTERNAL`` with a generic message (the cause is logged, never sent).
Unary inference calls are counted in the app's metrics as the HTTP routes are (protocol
``<name>_grpc``); who may call is checked before, by :mod:`.auth`'s interceptor.
"""

from __future__ import annotations

import logging
import os
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Iterator

import grpc
from google.protobuf.message import DecodeError

from ..errors import Code, PredictError
from ..record import RequestRecord, current_request
from .messages import POOL, message_class

if TYPE_CHECKING:
    from ..metrics import Metrics

logger = logging.getLogger("flask_predict.grpc")

INFERENCE_VERBS = {
    "inference.GRPCInferenceService": {"ModelInfer": "predict"},
    "tensorflow.serving.PredictionService": {"Predict": "predict", "Classify": "classify",
                                             "Regress": "regress", "MultiInference": "predict"},
}
"""The unary rpcs that run a model, with the metrics ``verb`` they count as. grps's servicer
counts its own ``Predict`` (protocol ``grps_grpc``): it answers failures inside an OK
message, which only it knows."""

GRPC_STATUS: dict[Code, grpc.StatusCode] = {
    Code.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    Code.FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Code.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Code.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Code.UNIMPLEMENTED: grpc.StatusCode.UNIMPLEMENTED,
    Code.INTERNAL: grpc.StatusCode.INTERNAL,
    Code.PAYLOAD_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Code.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Code.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Code.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    Code.METHOD_NOT_ALLOWED: grpc.StatusCode.UNIMPLEMENTED,
}
"""Each error code's gRPC status: the canonical codes are gRPC's own, as in TF Serving,
Triton and KServe; an oversized message is gRPC's ``RESOURCE_EXHAUSTED``."""

WORKER_KEY = "flask-predict-worker"
"""Trailing metadata key of every answer: the pid of the worker process that served it."""


def as_error(exc: Exception, method: str) -> PredictError:
    """*exc* as a :class:`PredictError`, logged once (client mistakes at INFO without a
    traceback, failures with it); an unexpected exception's message is never sent."""
    error = exc if isinstance(exc, PredictError) else PredictError("internal server error")
    if error.code in (Code.INTERNAL, Code.UNAVAILABLE):
        logger.error("%s: %s", method, error.message, exc_info=exc)
    else:
        logger.info("%s: %s", method, error.message)
    return error


class _Undecodable:
    """A request whose bytes are not its message: answered ``INVALID_ARGUMENT``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _decoder(cls: Any) -> Callable[[bytes], Any]:
    """*cls*'s parser, keeping a parse failure for the handler: grpcio itself would answer
    ``INTERNAL`` (a server error) for what is the client's mistake."""
    def decode(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except DecodeError as exc:
            return _Undecodable(str(exc))
    return decode


def _refuse_undecodable(request: Any, context: grpc.ServicerContext, method: str) -> None:
    if isinstance(request, _Undecodable):
        logger.info("%s: %s", method, request.reason)
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)


def _abort(context: grpc.ServicerContext, exc: Exception, method: str) -> None:
    error = as_error(exc, method)
    context.abort(GRPC_STATUS[error.code], error.message)


class _Calls:
    """What every handler of one service shares."""

    def __init__(self, service: str, metrics: Metrics | None, protocol: str) -> None:
        self.service = service
        self.metrics = metrics
        self.protocol = f"{protocol}_grpc"
        self.worker = ((WORKER_KEY, str(os.getpid())),)

    def unary(self, call: Callable[[Any], Any], name: str
              ) -> Callable[[Any, grpc.ServicerContext], Any]:
        method = f"/{self.service}/{name}"
        verbs = INFERENCE_VERBS.get(self.service, {}) if self.metrics is not None else {}
        verb = verbs.get(name)

        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            context.set_trailing_metadata(self.worker)
            _refuse_undecodable(request, context, method)
            record = None
            if verb is not None:
                record = RequestRecord(self.protocol, verb, "-", False, request.ByteSize())
                current_request.set(record)
                self.metrics.started()  # type: ignore[union-attr]
            status = 200
            try:
                return call(request)
            except Exception as exc:
                error = as_error(exc, method)
                status = error.http_status
                context.abort(GRPC_STATUS[error.code], error.message)
            finally:
                if record is not None:
                    current_request.set(None)
                    self.metrics.finished(  # type: ignore[union-attr]
                        record, status, None, perf_counter())

        return handle

    def streaming(self, call: Callable[[Any], Iterator[Any]], name: str
                  ) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
        method = f"/{self.service}/{name}"

        def handle(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            context.set_trailing_metadata(self.worker)
            _refuse_undecodable(request, context, method)
            try:
                yield from call(request)
            except Exception as exc:
                _abort(context, exc, method)

        return handle


def service_handler(service: str, servicer: object, metrics: Metrics | None = None,
                    protocol: str = "") -> grpc.GenericRpcHandler:
    """The handler of every rpc of *service* (its full name), bound to *servicer*;
    *metrics* counts the inference calls of *protocol*."""
    descriptor = POOL.FindServiceByName(service)
    calls = _Calls(service, metrics, protocol)
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in descriptor.methods:
        call = getattr(servicer, method.name)
        decode = _decoder(message_class(method.input_type.full_name))
        encode = message_class(method.output_type.full_name).SerializeToString
        if method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                calls.streaming(call, method.name), request_deserializer=decode,
                response_serializer=encode)
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                calls.unary(call, method.name), request_deserializer=decode,
                response_serializer=encode)
    return grpc.method_handlers_generic_handler(service, handlers)
