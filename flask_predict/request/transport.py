"""What tracing and the payload log read of a request, whatever carried it: each front end
(REST: :mod:`.http_transport`; gRPC: :mod:`.grpc.carrier`) says it through a
:class:`Transport`, and hands the request's scope (:mod:`.scope`) a *carrier* to read it
from. No Flask, no gRPC here.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from .record import RequestRecord


class Body(NamedTuple):
    """One side of a payload record."""

    value: Any
    """The JSON itself (``encoding`` ``json``), the text cut at the cap (``text``), the
    bytes in base64 (``base64``), or ``None`` (nothing kept)."""
    encoding: str | None
    size: int | None
    """Bytes of the body (a gRPC message: serialized; ``None``: not known)."""
    truncated: bool
    """The body was over the cap: ``value`` is its beginning as text, or ``None``."""


NOT_KEPT = Body(None, None, None, False)


class Kept(Protocol):
    """What a transport keeps of one body or message."""

    def render(self, limit: int) -> Body:
        """The body as a payload record holds it, at most *limit* bytes of it."""


class Transport(Protocol):
    """What tracing and the payload log read of one transport's requests (REST: the Flask
    request; gRPC: the call), from the *carrier* its front end hands :meth:`Scopes.open`."""

    def header(self, carrier: Any, name: str) -> str | None:
        """The request's header (REST) or metadata value (gRPC) *name* (lower case)."""

    def span_start(self, carrier: Any, record: RequestRecord) -> tuple[str, dict[str, Any]]:
        """The server span's name and its attributes known at the start (OpenTelemetry's
        HTTP or RPC semantic conventions)."""

    def span_end(self, carrier: Any, status: int, response_bytes: int | None
                 ) -> tuple[dict[str, Any], str | None]:
        """The span's attributes known at the end, and its error type when the request
        failed (``None``: it did not)."""

    def keep_request(self, carrier: Any, limit: int) -> Kept | None:
        """The request's body or message, kept for the payload log (at least its first
        *limit* + 1 bytes, where it is kept as it is read)."""

    def keep_response(self, response: Any) -> Kept | None:
        """The answer's body or message (what :meth:`Scopes.close` was given), kept for
        the payload log; ``None`` when there is none to keep (a stream)."""
