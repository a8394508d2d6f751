"""The server's log lines, text or JSON (``PREDICT_LOG_FORMAT``).

Text is gunicorn's own format (``[time] [pid] [LEVEL] message``). JSON makes every line of
the standalone server's log one JSON object: gunicorn's lines (the master's and each
worker's), flask_predict's (loads, failures, the line at start) and the access lines, so a
log collector parses the stream line by line. A line logged while a request runs (its
scope is open: :data:`flask_predict.request.record.current_request`) carries the request's id, as
its access line does. The server wires the formatter in (``flask_predict.process.server``); an app
that embeds the extension keeps its own logging, and may use :class:`JsonFormatter` too.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

import orjson

from ..request.record import current_request
from ..errors import ConfigError

FORMATS = ("text", "json")


def log_format(value: Any, access: str | None) -> str:
    """``PREDICT_LOG_FORMAT``: ``"text"`` or ``"json"``. Unset, it follows the access
    lines' format (``PREDICT_ACCESS_LOG=json``), so that one stream holds one format."""
    if value in (None, ""):
        return "json" if access == "json" else "text"
    if value not in FORMATS:
        raise ConfigError(f"PREDICT_LOG_FORMAT must be 'text' or 'json', got {value!r}")
    return str(value)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (seconds since the epoch, as the access lines),
    ``level``, ``logger``, ``pid``, ``message``, the ``request_id`` of the request running
    on this thread, and ``exception`` (the traceback, one string) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"time": round(record.created, 6), "level": record.levelname,
                                "logger": record.name, "pid": record.process,
                                "message": record.getMessage()}
        request = current_request.get()
        if request is not None:
            line["request_id"] = request.request_id
        if record.exc_info and record.exc_info[0] is not None:  # not sys.exc_info() of none
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str).decode()


def use_json(handlers: Iterable[logging.Handler]) -> None:
    """Give each of *handlers* the JSON formatter."""
    for handler in handlers:
        handler.setFormatter(JsonFormatter())
