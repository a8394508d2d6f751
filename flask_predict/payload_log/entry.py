"""One payload record: what a kept request and its answer were, as its writer renders it.

A record holds (every key always present)::

    {"time": "2026-11-27T10:15:02.123456Z", "protocol": "kserve_v2", "verb": "predict",
     "model": "iris", "version": "1", "request_id": "...", "trace_id": "..." or null,
     "status": 200, "latency_ms": 1.234,
     "request": {...}, "request_encoding": "json", "request_bytes": 95,
     "request_truncated": false,
     "response": {...}, "response_encoding": "json", "response_bytes": 160,
     "response_truncated": false}

``request`` and ``response`` are the bodies in the protocol's own JSON (a gRPC message in
protobuf's JSON mapping); over the size cap they are cut and marked (``*_truncated``, the
beginning as ``text``), a body that is not JSON is ``text`` or ``base64``, and a side the
policy leaves out, or an answer that was streamed, is ``null``. No header is ever kept.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..request.record import RequestRecord
from ..request.transport import NOT_KEPT, Body, Kept


class Entry:
    """A kept request, as its scope closed it."""

    __slots__ = ("record", "status", "seconds", "time", "request", "response")

    def __init__(self, record: RequestRecord, status: int, seconds: float, started: float,
                 request: Kept | None, response: Kept | None) -> None:
        self.record = record
        self.status = status
        self.seconds = seconds
        self.time = started
        """When the request arrived (unix time)."""
        self.request = request
        self.response = response

    def render(self, limit: int) -> dict[str, Any]:
        """The record, bodies cut at *limit* bytes (called by the writer thread)."""
        record = self.record
        request = self.request.render(limit) if self.request is not None else \
            NOT_KEPT._replace(size=record.request_bytes)
        response = self.response.render(limit) if self.response is not None else NOT_KEPT
        return {
            "time": datetime.fromtimestamp(self.time, timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ"),
            "protocol": record.protocol, "verb": record.verb,
            "model": record.model or None, "version": record.version or None,
            "request_id": record.request_id, "trace_id": record.trace_id or None,
            "status": self.status, "latency_ms": round(self.seconds * 1000, 3),
            **_side("request", request), **_side("response", response),
        }


def _side(name: str, body: Body) -> dict[str, Any]:
    return {name: body.value, f"{name}_encoding": body.encoding,
            f"{name}_bytes": body.size, f"{name}_truncated": body.truncated}
