"""The binary tensor data extension: raw bytes <-> arrays.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/
extension_binary_data.md
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ... import codecs
from ...errors import InvalidInput
from ...types import Tensor

HEADER_LENGTH = "Inference-Header-Content-Length"
HEADER_LENGTH_KEY = "HTTP_INFERENCE_HEADER_CONTENT_LENGTH"
"""The same header in the WSGI environ (read there: Werkzeug's header lookup costs more)."""
"""The binary extension's header: length of the JSON part of a body with binary data."""

_LENGTH = struct.Struct("<I")

def split_body(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    """Split a body into its JSON part and the binary data after it.

    *header_length* is the ``Inference-Header-Content-Length`` header (``None``: the whole
    body is JSON).
    """
    if header_length is None:
        return body, b""
    try:
        length = int(header_length.strip())
    except ValueError:
        raise InvalidInput(f"{HEADER_LENGTH} must be an integer, got {header_length!r}")
    if length < 0:
        raise InvalidInput(f"{HEADER_LENGTH} must not be negative, got {length}")
    if length > len(body):
        raise InvalidInput(f"{HEADER_LENGTH} is {length} but the body has only "
                           f"{len(body)} bytes")
    return body[:length], body[length:]


def binary_to_array(chunk: bytes, datatype: str, shape: tuple[int, ...], name: str) -> Tensor:
    """Raw little-endian bytes (BYTES: 4-byte length + bytes per element) as an array."""
    count = math.prod(shape)
    if datatype == "BYTES":
        values = _split_bytes(chunk, name, shape)
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array.reshape(shape)
    dtype = codecs.V2_TO_NUMPY[datatype]
    if len(chunk) != count * dtype.itemsize:
        raise InvalidInput(f"input {name!r}: binary_data_size is {len(chunk)} bytes but "
                           f"{datatype} of shape {list(shape)} needs "
                           f"{count * dtype.itemsize}")
    if dtype.kind == "b":
        raw = np.frombuffer(chunk, dtype=np.uint8)
        if raw.size and raw.max() > 1:
            raise InvalidInput(f"input {name!r}: BOOL bytes must be 0 or 1")
        return raw.astype(np.bool_).reshape(shape)
    return np.frombuffer(chunk, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _split_bytes(chunk: bytes, name: str, shape: tuple[int, ...]) -> list[bytes]:
    """The length-prefixed elements of *chunk*, as many as *shape* needs; no element past
    those is cut out (a body of empty elements must not become millions of objects before
    it is refused)."""
    count = math.prod(shape)
    values: list[bytes] = []
    offset, end = 0, len(chunk)
    while offset < end:
        if len(values) == count:
            raise InvalidInput(f"input {name!r}: shape {list(shape)} needs {count} values, "
                               f"got more")
        if offset + 4 > end:
            raise InvalidInput(f"input {name!r}: BYTES data ends inside a length prefix")
        (length,) = _LENGTH.unpack_from(chunk, offset)
        offset += 4
        if offset + length > end:
            raise InvalidInput(f"input {name!r}: BYTES element of {length} bytes runs past "
                               "the end of its data")
        values.append(chunk[offset:offset + length])
        offset += length
    if len(values) != count:
        raise InvalidInput(f"input {name!r}: shape {list(shape)} needs {count} values, "
                           f"got {len(values)}")
    return values


def array_to_binary(array: Tensor) -> bytes:
    """Little-endian row-major bytes; BYTES elements as 4-byte length + bytes."""
    if array.dtype.kind in "OSU":
        values = [codecs.as_bytes(v) for v in array.reshape(-1).tolist()]
        return b"".join(_LENGTH.pack(len(v)) + v for v in values)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
