"""Servicer objects -> gRPC method handlers, and errors -> gRPC status codes.

A servicer is a plain object with one method per rpc of its service, taking the request
message and returning the answer (or yielding answers, for a server-streaming rpc). The
handlers built here deserialize with the classes of :mod:`.messages`, open and close each
call's scope (:mod:`flask_predict.core.scope`: the same record, metrics and access line as a REST
request, protocol ``<name>_grpc``, the verb its protocol's descriptor names, the client's
deadline), turn any :class:`~flask_predict.errors.PredictError` into its status code and
message, and anything else into ``INTERNAL`` with a generic message (the cause is logged,
never sent). Who may call is checked first thing in the scope, by the guard of
:mod:`.auth`: a refused call is counted and access-logged as a REST 401 or 403 is.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Iterator

import grpc
from google.protobuf.message import DecodeError

from ..core.scope import Scopes, probe_answer
from ..errors import Code, InvalidInput, PredictError
from ..request.descriptor import Protocol
from .carrier import GrpcTransport
from .messages import POOL, message_class

logger = logging.getLogger("flask_predict.grpc")

NO_DEADLINE = 86400.0 * 365
"""A deadline further away than this many seconds is no deadline."""
REQUEST_ID_KEY = "x-request-id"
"""Call metadata key of the client's request id (as the REST header), echoed back in the
trailing metadata."""

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
    if probe_answer(error):
        return error
    if error.code in (Code.INTERNAL, Code.UNAVAILABLE):
        logger.error("%s: %s%s", method, error.message, error.detail,
                     exc_info=exc if error.log_traceback else None)
    else:
        logger.info("%s: %s%s", method, error.message, error.detail)
    return error


class Received:
    """A request as it arrived: its message (``None`` when its bytes are not one, answered
    ``INVALID_ARGUMENT``), and its size on the wire (re-encoding a message to measure it
    costs as much as parsing it)."""

    __slots__ = ("message", "size", "reason")

    def __init__(self, message: Any, size: int, reason: str = "") -> None:
        self.message = message
        self.size = size
        self.reason = reason


def _decoder(cls: Any) -> Callable[[bytes], Received]:
    """*cls*'s parser, keeping a parse failure for the handler: grpcio itself would answer
    ``INTERNAL`` (a server error) for what is the client's mistake."""
    def decode(data: bytes) -> Received:
        try:
            return Received(cls.FromString(data), len(data))
        except DecodeError as exc:
            return Received(None, len(data), str(exc))
    return decode


Guard = Callable[[str, grpc.ServicerContext], None]
"""Who may make a call: ``guard(method, context)`` raises the refusal (a
:class:`~flask_predict.errors.PredictError`), inside the call's scope (:mod:`.auth`)."""


def _peer_address(context: grpc.ServicerContext) -> str:
    """The client's address (``ipv4:127.0.0.1:5000`` -> ``127.0.0.1``), as REST's
    ``REMOTE_ADDR``."""
    peer = context.peer() or "-"
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rsplit(":", 1)[0].strip("[]")
    return peer


def _call_id(context: grpc.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata():
        if key == REQUEST_ID_KEY and isinstance(value, str):
            return value
    return None


class _Calls:
    """What every handler of one service shares."""

    def __init__(self, service: str, scopes: Scopes, protocol: Protocol,
                 answer_status: Callable[[Any], int] | None, port: int | None = None,
                 guard: Guard | None = None) -> None:
        self.service = service
        self.scopes = scopes
        self.transport = GrpcTransport(service, port)
        self.protocol = protocol
        self.label = f"{protocol.name}_grpc"
        self.answer_status = answer_status
        """The HTTP-like status of an answer that reports a failure in an OK message
        (grps); ``None``: an answer is 200."""
        self.guard = guard
        self.worker = (WORKER_KEY, str(os.getpid()))

    def _open(self, received: Received, context: grpc.ServicerContext, name: str,
              method: str) -> Any:
        """Open the call's scope (its size: the bytes received)."""
        left = context.time_remaining()
        if left is not None and left > NO_DEADLINE:
            left = None  # a call without a deadline reads as one in the far future
        return self.scopes.open(
            self.label, self.protocol.rpc_verb(name), _call_id(context), received.size,
            "POST", method, _peer_address(context),
            None if left is None else time.monotonic() + left,
            (context, received.message, name), self.transport)

    def _checked(self, received: Received, context: grpc.ServicerContext,
                 method: str) -> Any:
        """The call's message, once the guard lets it through (a refusal is answered,
        counted and logged as the call's own status) and its bytes parsed."""
        if self.guard is not None:
            self.guard(method, context)
        if received.message is None:
            raise InvalidInput(received.reason)
        return received.message

    def _trailer(self, context: grpc.ServicerContext, record: Any) -> None:
        context.set_trailing_metadata((self.worker, (REQUEST_ID_KEY, record.request_id)))

    def _failed(self, context: grpc.ServicerContext, record: Any, exc: Exception,
                method: str) -> tuple[grpc.StatusCode, str, int]:
        """*exc* as the call's status code and message, and its HTTP-like status for the
        record (logged once; the trailer set before the abort)."""
        error = as_error(exc, method)
        self._trailer(context, record)
        return GRPC_STATUS[error.code], error.message, error.http_status

    def unary(self, call: Callable[[Any], Any], name: str
              ) -> Callable[[Received, grpc.ServicerContext], Any]:
        method = f"/{self.service}/{name}"

        def handle(received: Received, context: grpc.ServicerContext) -> Any:
            record = self._open(received, context, name, method)
            status = 400
            answer = None
            try:
                answer = call(self._checked(received, context, method))
                status = self.answer_status(answer) if self.answer_status else 200
                self._trailer(context, record)
                return answer
            except Exception as exc:
                code, message, status = self._failed(context, record, exc, method)
                context.abort(code, message)
            finally:
                self.scopes.close(record, status, None, answer)

        return handle

    def streaming(self, call: Callable[[Any], Iterator[Any]], name: str
                  ) -> Callable[[Received, grpc.ServicerContext], Iterator[Any]]:
        method = f"/{self.service}/{name}"

        def handle(received: Received, context: grpc.ServicerContext) -> Iterator[Any]:
            record = self._open(received, context, name, method)
            status = 400
            try:
                message = self._checked(received, context, method)
                status = 200
                for answer in call(message):
                    if self.answer_status is not None:
                        status = max(status, self.answer_status(answer))
                    yield answer
                self._trailer(context, record)
            except Exception as exc:
                code, text, status = self._failed(context, record, exc, method)
                context.abort(code, text)
            finally:
                self.scopes.close(record, status, None)

        return handle


def method_handlers(service: str, servicer: object, scopes: Scopes, protocol: Protocol,
                    port: int | None = None, guard: Guard | None = None
                    ) -> dict[str, grpc.RpcMethodHandler]:
    """The handler of each rpc of *service* (its full name), by rpc name, bound to
    *servicer*, each call in a scope of *scopes* for *protocol* (served on *port*, for
    traces) and let through by *guard*: what ``add_registered_method_handlers`` takes, so
    grpcio finds a call's handler with its method, not by asking handlers in turn. A
    servicer whose answers report failures themselves says how to read their status with an
    ``answer_status(answer)`` method."""
    descriptor = POOL.FindServiceByName(service)
    calls = _Calls(service, scopes, protocol, getattr(servicer, "answer_status", None), port,
                   guard)
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
    return handlers
