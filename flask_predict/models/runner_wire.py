"""The runner's framed binary protocol over a Unix socket: one message each way per call.

A message is a fixed prefix (magic, header length, body length), a JSON header, then the raw
bytes of its arrays, one after another. The header names each array with its dtype, shape and
byte count, so numeric tensors cross as their own buffers (no JSON, no per-number work) and
are read back with one ``numpy.frombuffer`` each. An array of Python objects (TensorFlow's
``string`` tensors: ``bytes``, or ``str``) crosses as its elements, each a kind byte
(``b``: bytes, ``s``: text) and a length, then its bytes; any other object is refused.

The header is small and written only by our own processes (worker and runner); it is JSON,
never pickle, so a message can carry nothing that executes.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Mapping, Sequence

import numpy as np

MAGIC = b"FPR1"
PREFIX = struct.Struct("!4sIQ")
"""Magic, header length (bytes), body length (bytes)."""
MAX_HEADER = 64 << 20
"""A header longer than this is a broken stream, not a message."""
_ITEM = struct.Struct("!cI")


class WireError(Exception):
    """The stream is broken: closed midway, or bytes that are not a message."""


def encode_arrays(arrays: Mapping[str, np.ndarray]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The header entries and the buffers of *arrays*, in their order."""
    specs: list[dict[str, Any]] = []
    buffers: list[Any] = []
    for name, value in arrays.items():
        array = np.asarray(value)
        if array.dtype == object:
            data = _objects(array)
            specs.append({"name": name, "dtype": "object", "shape": list(array.shape),
                          "nbytes": len(data)})
            buffers.append(data)
            continue
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise TypeError(f"array {name!r} has dtype {array.dtype}, which cannot cross")
        if not array.flags.c_contiguous:  # (ascontiguousarray would make a scalar 1-D)
            array = array.copy(order="C")
        specs.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape),
                      "nbytes": array.nbytes})
        buffers.append(array.reshape(-1).view(np.uint8).data if array.nbytes else b"")
    return specs, buffers


def _objects(array: np.ndarray) -> bytes:
    parts: list[bytes] = []
    for item in array.reshape(-1):
        if isinstance(item, bytes):
            parts += (_ITEM.pack(b"b", len(item)), item)
        elif isinstance(item, str):
            data = item.encode("utf-8", "surrogatepass")
            parts += (_ITEM.pack(b"s", len(data)), data)
        else:
            raise TypeError(f"an object array holds a {type(item).__name__}, which cannot "
                            "cross (bytes and text only)")
    return b"".join(parts)


def decode_arrays(specs: Sequence[Mapping[str, Any]], body: memoryview, copy: bool = True
                  ) -> dict[str, np.ndarray]:
    """The arrays that *specs* describe, read from *body* (their buffers one after another):
    copies of them, unless *copy* is false (a body no one else writes to again)."""
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for spec in specs:
        nbytes = int(spec["nbytes"])
        data = body[offset:offset + nbytes]
        if len(data) != nbytes:
            raise WireError("a message's arrays are shorter than its header says")
        offset += nbytes
        shape = tuple(int(n) for n in spec["shape"])
        if spec["dtype"] == "object":
            arrays[spec["name"]] = _read_objects(data, shape)
        else:
            # a copy where the body is the connection's buffer: the answer outlives it
            array = np.frombuffer(data, dtype=np.dtype(spec["dtype"])).reshape(shape)
            arrays[spec["name"]] = array.copy() if copy else array
    return arrays


def _read_objects(data: memoryview, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    items: list[Any] = []
    offset = 0
    for _ in range(count):
        kind, size = _ITEM.unpack_from(data, offset)
        offset += _ITEM.size
        raw = bytes(data[offset:offset + size])
        offset += size
        items.append(raw if kind == b"b" else raw.decode("utf-8", "surrogatepass"))
    array = np.empty(count, dtype=object)
    array[:] = items
    return array.reshape(shape)


IOV_MAX = 512
"""Buffers handed to one ``sendmsg`` at most (the system's limit is 1024)."""
BUFFER = 68 << 10
"""A connection's receive buffer (bytes): a message that fits is read with one
``recv_into``; one larger reads its body into a buffer of its own."""


def send(sock: socket.socket, header: Mapping[str, Any],
         arrays: Mapping[str, np.ndarray] | None = None) -> None:
    """Write one message: *header* (JSON-able) and *arrays* (``header["arrays"]`` says them),
    with one ``sendmsg`` of the prefix, header and the arrays' own buffers (no copy into one
    string first); more only when the socket takes part of it."""
    head = dict(header)
    buffers: list[Any] = []
    if arrays:
        head["arrays"], buffers = encode_arrays(arrays)
    text = json.dumps(head, separators=(",", ":"), allow_nan=False).encode()
    body = sum(len(b) for b in buffers)
    parts = [PREFIX.pack(MAGIC, len(text), body) + text, *(b for b in buffers if len(b))]
    while parts:
        sent = sock.sendmsg(parts[:IOV_MAX])
        while parts and sent >= len(parts[0]):
            sent -= len(parts.pop(0))
        if sent:
            parts[0] = memoryview(parts[0])[sent:]


class Reader:
    """The reading end of one connection. Whatever the socket has is read into one buffer
    kept for the connection, so a message that fits it (the usual small one) costs one
    ``recv_into``; a larger message's body is read into a buffer of its own, which its
    arrays then use without a copy. Bytes past a message stay for the next."""

    def __init__(self, sock: socket.socket, size: int = BUFFER) -> None:
        self.sock = sock
        self._buffer = bytearray(size)
        self._view = memoryview(self._buffer)
        self._start = 0
        self._end = 0
        """The unread bytes are ``_buffer[_start:_end]``."""

    def receive(self) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """Read one message; ``None`` when the peer closed the stream between messages."""
        if not self._fill(PREFIX.size, eof_ok=True):
            return None
        magic, head_size, body_size = PREFIX.unpack_from(self._buffer, self._start)
        if magic != MAGIC or head_size > MAX_HEADER:
            raise WireError("not a runner message")
        whole = PREFIX.size + head_size + body_size
        if whole <= len(self._buffer):
            self._fill(whole)
            head_at = self._start + PREFIX.size
            body_at = head_at + head_size
            head = self._view[head_at:body_at]
            body, owned = self._view[body_at:body_at + body_size], False
            self._start += whole
        else:  # a large message: its body gets a buffer of its own
            self._fill(PREFIX.size + head_size)
            head_at = self._start + PREFIX.size
            head = memoryview(bytes(self._view[head_at:head_at + head_size]))
            self._start = head_at + head_size
            body, owned = memoryview(bytearray(body_size)), True
            got = min(body_size, self._end - self._start)
            body[:got] = self._view[self._start:self._start + got]
            self._start += got
            while got < body_size:
                n = self.sock.recv_into(body[got:], body_size - got)
                if n == 0:
                    raise WireError("the peer closed the stream in the middle of a message")
                got += n
        try:
            header = json.loads(bytes(head))
        except ValueError as exc:
            raise WireError(f"a runner message's header is not JSON: {exc}") from None
        arrays = decode_arrays(header.pop("arrays", ()), body, copy=not owned)
        return header, arrays

    def _fill(self, size: int, eof_ok: bool = False) -> bool:
        """At least *size* unread bytes in the buffer (``size <= len(buffer)``); ``False``
        when the peer closed the stream before any (and *eof_ok*)."""
        if self._end - self._start >= size:
            return True
        if self._start == self._end:
            self._start = self._end = 0
        elif self._start + size > len(self._buffer):  # the rest to the front
            kept = self._end - self._start
            self._buffer[:kept] = self._view[self._start:self._end]
            self._start, self._end = 0, kept
        while self._end - self._start < size:
            n = self.sock.recv_into(self._view[self._end:], len(self._buffer) - self._end)
            if n == 0:
                if eof_ok and self._end == self._start:
                    return False
                raise WireError("the peer closed the stream in the middle of a message")
            self._end += n
        return True
