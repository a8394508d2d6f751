"""Servicer objects -> gRPC method handlers, and errors -> gRPC status codes.

A servicer is a plain object with one method per rpc of its service, taking the request
message and returning the answer (or yielding answers, for a server-streaming rpc). The
handlers built here deserialize with the classes of :mod:`.messages`, turn any
:class:`~flask_predict.errors.PredictError` into its status code and message, and turn
anything else into ``INTERNAL`` with a generic message (the cause is logged, never sent).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Iterator

import grpc

from ..errors import Code, PredictError
from .messages import POOL, message_class

logger = logging.getLogger("flask_predict.grpc")

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


def _abort(context: grpc.ServicerContext, exc: Exception, method: str) -> None:
    error = as_error(exc, method)
    context.abort(GRPC_STATUS[error.code], error.message)


def _unary(call: Callable[[Any], Any], method: str, worker: tuple[tuple[str, str]]
           ) -> Callable[[Any, grpc.ServicerContext], Any]:
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        context.set_trailing_metadata(worker)
        try:
            return call(request)
        except Exception as exc:
            _abort(context, exc, method)

    return handle


def _streaming(call: Callable[[Any], Iterator[Any]], method: str,
               worker: tuple[tuple[str, str]]
               ) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    def handle(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        context.set_trailing_metadata(worker)
        try:
            yield from call(request)
        except Exception as exc:
            _abort(context, exc, method)

    return handle


def service_handler(service: str, servicer: object) -> grpc.GenericRpcHandler:
    """The handler of every rpc of *service* (its full name), bound to *servicer*."""
    descriptor = POOL.FindServiceByName(service)
    worker = ((WORKER_KEY, str(os.getpid())),)
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in descriptor.methods:
        call = getattr(servicer, method.name)
        full = f"/{service}/{method.name}"
        decode = message_class(method.input_type.full_name).FromString
        encode = message_class(method.output_type.full_name).SerializeToString
        if method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _streaming(call, full, worker), request_deserializer=decode,
                response_serializer=encode)
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _unary(call, full, worker), request_deserializer=decode,
                response_serializer=encode)
    return grpc.method_handlers_generic_handler(service, handlers)
