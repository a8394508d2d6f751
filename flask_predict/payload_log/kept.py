"""A sampled request's body or message, kept for the payload log, and how it is written:
as the protocol's own JSON where it is JSON and within the size cap, else marked.

Kept bodies are rendered by the log's writer thread, never on the request path: a REST body
is parsed there (inflated first when it came gzip- or deflate-encoded); a gRPC message is
turned into its JSON by its transport's :class:`Kept` (:mod:`flask_predict.grpc.carrier`).
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from ..request.transport import Body

INFLATE = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def render_bytes(data: bytes, size: int, limit: int, cut: bool = False) -> Body:
    """A *size*-byte body whose first bytes (all of it unless *cut*, and at least
    *limit* + 1 when there are more) are *data*: its JSON when it is JSON within *limit*,
    else its beginning as text (truncated), its text, or its bytes in base64."""
    if cut or len(data) > limit:
        return Body(data[:limit].decode("utf-8", "replace"), "text", size, True)
    try:
        return Body(json.loads(data), "json", size, False)  # NaN as the protocols read it
    except (ValueError, RecursionError):
        pass
    try:
        return Body(data.decode("utf-8"), "text", size, False)
    except UnicodeDecodeError:
        return Body(base64.b64encode(data).decode("ascii"), "base64", size, False)


class KeptBytes:
    """A body held whole (a REST answer)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def render(self, limit: int) -> Body:
        return render_bytes(self.data[:limit + 1], len(self.data), limit)


class KeptStream:
    """A WSGI input stream that keeps the first bytes read through it (a REST request's
    body, as the view reads it), and counts them all."""

    def __init__(self, stream: Any, encoding: str | None, keep: int) -> None:
        self.stream = stream
        self.encoding = (encoding or "identity").strip().lower()
        self.keep = keep
        """Bytes kept at most (the rest is counted)."""
        self.parts: list[bytes] = []
        self.kept = 0
        self.size = 0

    def _note(self, data: bytes) -> bytes:
        self.size += len(data)
        if self.kept < self.keep and data:
            part = data[:self.keep - self.kept]
            self.parts.append(part)
            self.kept += len(part)
        return data

    def read(self, *args: Any) -> bytes:
        return self._note(self.stream.read(*args))

    def readline(self, *args: Any) -> bytes:
        return self._note(self.stream.readline(*args))

    def readlines(self, *args: Any) -> list[bytes]:
        return [self._note(line) for line in self.stream.readlines(*args)]

    def __iter__(self) -> Any:
        for line in self.stream:
            yield self._note(line)

    def close(self) -> None:
        close = getattr(self.stream, "close", None)
        if close is not None:
            close()

    def render(self, limit: int) -> Body:
        data, size = b"".join(self.parts), self.size
        cut = self.kept < size
        if self.encoding in INFLATE and data:
            try:  # the beginning of a compressed body inflates too
                inflater = zlib.decompressobj(INFLATE[self.encoding])
                data = inflater.decompress(data, limit + 1)
            except zlib.error:
                return render_bytes(data, size, limit, cut)  # as it came
            cut = cut or bool(inflater.unconsumed_tail)
        return render_bytes(data[:limit + 1], size, limit, cut)
