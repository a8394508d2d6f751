"""The standalone server's log, gunicorn's side: gunicorn's logger in the server's format
(``PREDICT_LOG_FORMAT``, :mod:`flask_predict.observability.logs`), flask_predict's records and access lines
routed to gunicorn's error log, and the line at start saying what serves where. Nothing here
runs when the extension is embedded in another app.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from gunicorn.glogging import Logger

from ..errors import ConfigError
from ..observability import access_log, logs
from ..settings.config import Settings
from ..settings.environ import server_config
from . import server_settings


def announce(arbiter: Any) -> None:
    """In the master, listening: one line saying what serves where (the URLs of the REST
    routes, gRPC, the status page, the metrics and the API document) and which models."""
    try:
        settings = server_settings.current()
    except ConfigError:
        return  # the configuration check has said why
    arbiter.log.info("flask_predict: %s", where_line(settings, [str(listener) for listener
                                                                 in arbiter.LISTENERS],
                                                     arbiter.num_workers))


def where_line(settings: Settings, listeners: list[str], workers: int) -> str:
    """``serving [models] with N workers: REST <url> (<protocols>), gRPC <host:port>,
    status page <url>, metrics <url>, OpenAPI <url>`` for *listeners* (gunicorn's
    ``http://host:port`` or ``unix:path``)."""
    base = next((url for url in listeners if url.startswith("http")), "")
    prefix = settings.url_prefix
    served = [f"REST {', '.join(url + prefix for url in listeners)} "
              f"({', '.join(settings.protocols)})"]
    if settings.grpc.port is not None:
        served.append(f"gRPC {settings.grpc.host}:{settings.grpc.port}")
    for what, path in (("status page", settings.pages.status_path),
                       ("metrics", settings.pages.metrics_path if settings.observability.metrics else None),
                       ("OpenAPI", settings.pages.openapi_route and prefix + settings.pages.openapi_route)):
        if path:
            served.append(f"{what} {base}{path}")
    models = [spec.name for spec in settings.models]
    return f"serving {models or 'no model'} with {workers} worker(s): {', '.join(served)}"


def log_formats() -> tuple[str, bool]:
    """The server log's format (``PREDICT_LOG_FORMAT``) and whether access lines are JSON,
    as the environment sets them (text when a value is wrong: the settings check says so).
    Only these two keys, not the settings: gunicorn builds its logger before its first hook
    runs, and the settings are read once, by the configuration check that hook makes."""
    config = server_config()
    try:
        access = access_log.access_log_format(config.get("PREDICT_ACCESS_LOG", "text"))
        lines = logs.log_format(config.get("PREDICT_LOG_FORMAT"), access)
    except ConfigError:
        return "text", False
    return lines, access == "json" or lines == "json"


class ServerLogger(Logger):  # type: ignore[misc]  # gunicorn ships no hints
    """gunicorn's logger (``logger_class``), its lines in the server's format: with
    ``PREDICT_LOG_FORMAT=json`` the master's and each worker's lines are JSON too."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        if log_formats()[0] == "json":
            logs.use_json([*self.error_log.handlers, *self.access_log.handlers])


def route_logs(target: logging.Logger, level: str) -> None:
    """Send the ``flask_predict`` logger's records to *target*'s handlers (gunicorn's error
    log) at *level*, and the access-log lines straight to its stream (JSON lines without
    its prefix), whatever *level* is. In the JSON format, every other library's lines and
    Python's warnings go to those handlers too, so that no line of the stream is text."""
    source = logging.getLogger("flask_predict")
    source.handlers = list(target.handlers)
    source.setLevel(level.upper())
    source.propagate = False
    lines, json_access = log_formats()
    if lines == "json":
        root = logging.getLogger()
        root.handlers = list(target.handlers)
        logging.captureWarnings(True)
    stream = next((h.stream for h in target.handlers if isinstance(h, logging.StreamHandler)),
                  sys.stderr)
    access_log.write_to(stream, json_lines=json_access)
