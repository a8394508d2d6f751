"""Binary inputs, as Vertex AI batch prediction takes them: TFRecord files (``tf-record``,
``tf-record-gzip``), each record one instance, and file lists (``file-list``), each line
the path of a file whose bytes are one instance. Either instance is sent as
``{"b64": <the bytes, base64>}``, the form every protocol here reads as binary.

A TFRecord record is read with its framing checked (its length and its data against their
CRC-32C): a damaged or truncated record is an error line, and the rest of that file, whose
framing can no longer be trusted, is not read. A listed file that cannot be read is an
error line of its own. A chunk holds at most :data:`CHUNK_BYTES` of instances, so memory
stays bounded whatever the records' sizes.
"""

from __future__ import annotations

import base64
import gzip
import struct
from typing import IO, Any, Iterator

from ..errors import ConfigError
from .reading import Chunk, Unreadable, position
from .sources import Source, opener_for

CHUNK_BYTES = 64 << 20
"""A chunk of binary instances ends once its records reach this many bytes."""

_MASK_DELTA = 0xA282EAD8


def _crc_reader() -> Any:
    try:
        import google_crc32c
    except ImportError:
        raise ConfigError("reading TFRecord files needs google-crc32c: "
                          "pip install 'flask-predict[batch]'")
    return google_crc32c.value


def _masked(crc: int) -> int:
    """TFRecord's masked CRC: rotated right by 15 bits, plus a constant."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def tfrecords(file: IO[bytes]) -> Iterator[bytes | Unreadable]:
    """The records of a TFRecord stream; an :class:`Unreadable` (and the end) at the first
    record whose framing is damaged or cut short."""
    crc = _crc_reader()
    number = 0
    while True:
        number += 1
        head = file.read(12)
        if not head:
            return
        where = f"record {number}"
        if len(head) < 12:
            yield Unreadable(where, "the file ends inside a record's length")
            return
        length, length_crc = struct.unpack("<QI", head)
        if _masked(crc(head[:8])) != length_crc:
            yield Unreadable(where, "the record's length fails its checksum: not a TFRecord "
                                    "file, or a damaged one")
            return
        data = file.read(length)
        footer = file.read(4)
        if len(data) < length or len(footer) < 4:
            yield Unreadable(where, "the file ends inside a record")
            return
        if _masked(crc(data)) != struct.unpack("<I", footer)[0]:
            yield Unreadable(where, "the record's data fails its checksum")
            return
        yield data


BINARY_FORMATS = ("tf-record", "tf-record-gzip", "file-list")
"""The formats read here."""


def binary_chunks(source: Source, size: int) -> Iterator[Chunk]:
    """*source*'s binary instances (a TFRecord file or a file list), *size* at a time."""
    chunk = Chunk()
    held = read = 0  # bytes held in the chunk; input bytes read up to the chunk before
    with source.open() as raw:
        for item in _instances(source, raw):
            if isinstance(item, bytes):
                held += len(item)
                chunk.items.append({"b64": base64.b64encode(item).decode("ascii")})
            else:
                chunk.items.append(item)
            if len(chunk.items) >= size or held >= CHUNK_BYTES:
                chunk.read_bytes, read = position(raw) - read, position(raw)
                yield chunk
                chunk, held = Chunk(), 0
        chunk.read_bytes = position(raw) - read
    if chunk.items:
        yield chunk


def _instances(source: Source, raw: IO[bytes]) -> Iterator[bytes | Unreadable]:
    if source.format == "tf-record":
        return tfrecords(raw)
    if source.format == "tf-record-gzip":
        return _gzipped(raw)
    return _listed_files(raw)


def _gzipped(raw: IO[bytes]) -> Iterator[bytes | Unreadable]:
    try:
        with gzip.GzipFile(fileobj=raw) as file:
            yield from tfrecords(file)  # type: ignore[arg-type]  # GzipFile reads bytes
    except (OSError, EOFError) as exc:
        yield Unreadable("the file", f"the gzip stream cannot be read: {exc}")


def _listed_files(raw: IO[bytes]) -> Iterator[bytes | Unreadable]:
    """The bytes of each file a file list names (one path a line, blank lines skipped)."""
    for line in raw:
        path = line.decode("utf-8", "replace").strip()
        if not path:
            continue
        try:
            opener = opener_for(path)
            with opener.open(path) as file:
                yield file.read()
        except OSError as exc:
            yield Unreadable(path, f"the listed file cannot be read: {exc.strerror or exc}")
        except ConfigError as exc:  # a storage error among them
            yield Unreadable(path, f"the listed file cannot be read: {exc.message}")
