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
SMALL = 64 << 10
"""A message whose arrays are at most this many bytes is copied into one send."""


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


def decode_arrays(specs: Sequence[Mapping[str, Any]], body: memoryview) -> dict[str, np.ndarray]:
    """The arrays that *specs* describe, read from *body* (their buffers one after another)."""
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
            # a copy: the answer outlives the receive buffer, and callers may write to it
            arrays[spec["name"]] = np.frombuffer(data, dtype=np.dtype(spec["dtype"])
                                                 ).reshape(shape).copy()
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


def send(sock: socket.socket, header: Mapping[str, Any],
         arrays: Mapping[str, np.ndarray] | None = None) -> None:
    """Write one message: *header* (JSON-able) and *arrays* (``header["arrays"]`` says them)."""
    head = dict(header)
    buffers: list[Any] = []
    if arrays:
        head["arrays"], buffers = encode_arrays(arrays)
    text = json.dumps(head, separators=(",", ":"), allow_nan=False).encode()
    body = sum(len(b) if isinstance(b, bytes) else b.nbytes for b in buffers)
    head_bytes = PREFIX.pack(MAGIC, len(text), body) + text
    if body <= SMALL:  # one system call for the usual small message
        sock.sendall(b"".join([head_bytes, *buffers]))
        return
    sock.sendall(head_bytes)
    for buffer in buffers:
        if len(buffer):
            sock.sendall(buffer)


def receive(sock: socket.socket) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """Read one message; ``None`` when the peer closed the stream between messages."""
    prefix = _read(sock, PREFIX.size, eof_ok=True)
    if prefix is None:
        return None
    magic, head_size, body_size = PREFIX.unpack(prefix)
    if magic != MAGIC or head_size > MAX_HEADER:
        raise WireError("not a runner message")
    head = _read(sock, head_size)
    assert head is not None
    try:
        header = json.loads(bytes(head))
    except ValueError as exc:
        raise WireError(f"a runner message's header is not JSON: {exc}") from None
    body = _read(sock, body_size) if body_size else memoryview(b"")
    assert body is not None
    arrays = decode_arrays(header.pop("arrays", ()), body)
    return header, arrays


def _read(sock: socket.socket, size: int, eof_ok: bool = False) -> memoryview | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            if eof_ok and got == 0:
                return None
            raise WireError("the peer closed the stream in the middle of a message")
        got += n
    return view
