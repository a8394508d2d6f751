"""What tracing and the payload log read of a gRPC call: the :class:`~flask_predict.request.transport.Transport`
the handlers (:mod:`.handlers`) open each call's scope with. The carrier is
``(context, request message, rpc name)``.

Span attributes follow OpenTelemetry's RPC conventions (``rpc.system`` ``grpc``,
``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code``); the call's metadata other than
the trace context is never read. A sampled call keeps its request and answer messages, which
the payload log's writer turns into protobuf's JSON mapping.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from ..request.record import RequestRecord
from ..request.transport import Body

SERVER_ERRORS = frozenset({grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED,
                           grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INTERNAL,
                           grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS})
"""The codes that make a server span an error (OpenTelemetry's RPC conventions)."""


class KeptMessage:
    """A request or answer message, rendered as its JSON when within the size cap."""

    __slots__ = ("message",)

    def __init__(self, message: Message) -> None:
        self.message = message

    def render(self, limit: int) -> Body:
        size = self.message.ByteSize()
        if size > limit:
            return Body(None, None, size, True)
        return Body(json_format.MessageToDict(self.message), "json", size, False)


class GrpcTransport:
    """The calls of one gRPC service (*service*: its full name)."""

    def __init__(self, service: str, port: int | None = None) -> None:
        self.service = service
        self.port = port

    def header(self, carrier: Any, name: str) -> str | None:
        for key, value in carrier[0].invocation_metadata():
            if key == name and isinstance(value, str):
                return value
        return None

    def span_start(self, carrier: Any, record: RequestRecord) -> tuple[str, dict[str, Any]]:
        method = carrier[2]
        attributes: dict[str, Any] = {"rpc.system": "grpc", "rpc.service": self.service,
                                      "rpc.method": method}
        if record.client:
            attributes["client.address"] = record.client
        if self.port:
            attributes["server.port"] = self.port
        return f"{self.service}/{method}", attributes

    def span_end(self, carrier: Any, status: int, response_bytes: int | None
                 ) -> tuple[dict[str, Any], str | None]:
        code = carrier[0].code() or grpc.StatusCode.OK
        attributes = {"rpc.grpc.status_code": code.value[0]}
        if code in SERVER_ERRORS:
            return attributes, code.name
        return attributes, str(status) if status >= 500 else None  # grps: in an OK answer

    def keep_request(self, carrier: Any, limit: int) -> KeptMessage | None:
        request = carrier[1]
        return KeptMessage(request) if isinstance(request, Message) else None

    def keep_response(self, response: Any) -> KeptMessage | None:
        return KeptMessage(response) if isinstance(response, Message) else None
