"""Where payload records go: JSON lines on standard output or in a file rotated by size, or
CloudEvents over HTTP (:mod:`.cloudevents`). Each sink is written by one thread per worker.

The workers of a server share one file: each batch of lines is appended under an exclusive
``flock`` of ``<file>.lock``, which also guards the rotation (``<file>`` becomes
``<file>.1``, ``<file>.1`` becomes ``<file>.2`` ... up to ``PREDICT_PAYLOAD_LOG_FILE_BACKUPS``),
so lines never interleave and a worker that finds the file rotated by another reopens it.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import Any, Protocol

import orjson

from ..settings.payload_log import PayloadSettings


class Sink(Protocol):
    def write(self, records: list[dict[str, Any]]) -> None:
        """Write *records*; raise when they could not be written."""

    def close(self) -> None:
        """Release the sink (the writer thread ends)."""


def line(record: dict[str, Any]) -> bytes:
    """One JSON line (NaN and infinities, which JSON lacks, as ``null``; integers past
    64 bits, which orjson refuses, by the standard library)."""
    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return json.dumps(record).encode() + b"\n"


def open_sink(name: str, settings: PayloadSettings) -> Sink:
    """The sink :attr:`~.settings.Policy.sink` *name* names."""
    if name == "stdout":
        return StdoutSink()
    if name.startswith("file:"):
        return FileSink(name[len("file:"):], settings.file_max_bytes, settings.file_backups)
    from .cloudevents import CloudEventsSink

    return CloudEventsSink(name, settings.timeout_seconds, settings.source)


class StdoutSink:
    """JSON lines on standard output, one ``write`` a batch."""

    def write(self, records: list[dict[str, Any]]) -> None:
        data = b"".join(line(record) for record in records)
        while data:
            data = data[os.write(1, data):]

    def close(self) -> None:
        pass


class FileSink:
    """JSON lines appended to *path*, rotated past *max_bytes* (0: never)."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.fd = -1
        self.lock = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT, 0o644)

    def write(self, records: list[dict[str, Any]]) -> None:
        lines = [line(record) for record in records]
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            self._reopen_if_moved()
            size = os.fstat(self.fd).st_size
            pending: list[bytes] = []
            for data in lines:
                if self.max_bytes and size and size + len(data) > self.max_bytes:
                    self._append(pending)
                    pending = []
                    self._rotate()
                    size = 0
                pending.append(data)
                size += len(data)
            self._append(pending)
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)

    def _append(self, lines: list[bytes]) -> None:
        data = b"".join(lines)
        while data:
            data = data[os.write(self.fd, data):]

    def _reopen_if_moved(self) -> None:
        """Open the file the path names now (another worker may have rotated it)."""
        if self.fd >= 0:
            try:
                if os.stat(self.path).st_ino == os.fstat(self.fd).st_ino:
                    return
            except FileNotFoundError:
                pass
            os.close(self.fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _rotate(self) -> None:
        for index in range(self.backups - 1, 0, -1):
            older = f"{self.path}.{index}"
            if os.path.exists(older):
                os.replace(older, f"{self.path}.{index + 1}")
        os.replace(self.path, self.path + ".1")
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        os.close(self.lock)
