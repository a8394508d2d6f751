"""One access-log line per request: text (``key=value`` pairs) or a JSON object.

Lines go to the ``flask_predict.access`` logger, so an embedding app's logging settings
decide where they land. The standalone server instead hands this module the stream of
gunicorn's error log (:func:`write_to`): lines are then written there directly, one
``write`` each, with a timestamp formatted once a second, skipping the logging module's
per-line record and formatting (most of a line's cost).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, TextIO

import orjson

from ..request.record import RequestRecord
from ..errors import ConfigError

LOGGER = "flask_predict.access"


def access_log_format(value: Any) -> str | None:
    """The ``PREDICT_ACCESS_LOG`` setting as ``"text"``, ``"json"`` or ``None`` (off)."""
    if value in (None, False, "", "off", "false", "none"):
        return None
    if value is True or value == "text":
        return "text"
    if value == "json":
        return "json"
    raise ConfigError(f"PREDICT_ACCESS_LOG must be 'text', 'json' or false, got {value!r}")


class _Stream:
    """Whole lines to one stream, prefixed as gunicorn prefixes its own log lines."""

    def __init__(self, stream: TextIO, prefixed: bool) -> None:
        self.stream = stream
        self.prefixed = prefixed
        self.lock = threading.Lock()
        self.second = -1
        self.prefix = ""

    def write(self, line: str) -> None:
        if self.prefixed:
            now = int(time.time())
            if now != self.second:
                self.second = now
                self.prefix = time.strftime("[%Y-%m-%d %H:%M:%S %z] ", time.localtime(now)) \
                    + f"[{os.getpid()}] [INFO] "
            line = self.prefix + line
        with self.lock:
            self.stream.write(line + "\n")
            self.stream.flush()


_direct: _Stream | None = None


def write_to(stream: TextIO | None, json_lines: bool) -> None:
    """Write this process's access lines straight to *stream* (``None``: back to the
    logger). Text lines get gunicorn's ``[time] [pid] [INFO]`` prefix; JSON lines none."""
    global _direct
    _direct = None if stream is None else _Stream(stream, prefixed=not json_lines)


class AccessLog:
    """Formats and writes one app's access lines."""

    def __init__(self, json_lines: bool) -> None:
        self.json_lines = json_lines
        self.logger = logging.getLogger(LOGGER)

    def write(self, record: RequestRecord, status: int, size: int | None,
              ended: float) -> None:
        direct = _direct
        if direct is None and not self.logger.isEnabledFor(logging.INFO):
            return
        line = self.line(record, status, size, ended)
        if direct is not None:
            direct.write(line)
        else:  # a record made here, not by logger.info: no search of the stack for a caller
            self.logger.handle(self.logger.makeRecord(LOGGER, logging.INFO, "", 0, line, (),
                                                      None))

    def line(self, record: RequestRecord, status: int, size: int | None, ended: float) -> str:
        ms = (ended - record.started) * 1000.0
        if self.json_lines:
            return orjson.dumps({
                "time": time.time(), "request_id": record.request_id,
                "trace_id": record.trace_id or None, "client": record.client,
                "method": record.method, "path": record.path, "protocol": record.protocol,
                "verb": record.verb, "model": record.model, "version": record.version,
                "status": status, "request_bytes": record.request_bytes,
                "response_bytes": size, "ms": round(ms, 3),
                "predict_ms": round(record.predict_seconds * 1000, 3),
            }).decode()
        path = record.path
        if not path.isprintable() or " " in path or '"' in path:
            path = orjson.dumps(path).decode()  # quoted, escaped: one line, no forged fields
        trace = f" trace_id={record.trace_id}" if record.trace_id else ""
        return (f"request_id={record.request_id}{trace} client={record.client} "
                f"method={record.method} path={path} protocol={record.protocol} "
                f"verb={record.verb} model={record.model or '-'} "
                f"version={record.version or '-'} status={status} "
                f"request_bytes={record.request_bytes} "
                f"response_bytes={'-' if size is None else size} ms={ms:.3f}")
