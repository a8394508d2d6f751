"""logs: the server's log format, and its JSON lines (with the running request's id)."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from flask_predict import ConfigError
from flask_predict.settings.app import read_settings
from flask_predict.observability.logs import JsonFormatter, log_format, use_json
from flask_predict.request.record import RequestRecord, current_request


def test_the_format_follows_the_access_lines_unless_set() -> None:
    assert log_format(None, "text") == "text" and log_format(None, None) == "text"
    assert log_format(None, "json") == "json"  # one format in one stream
    assert log_format("text", "json") == "text" and log_format("json", "text") == "json"
    with pytest.raises(ConfigError, match="PREDICT_LOG_FORMAT must be 'text' or 'json'"):
        log_format("yaml", "text")


def test_settings() -> None:
    settings = read_settings({"PREDICT_MODELS": {}})
    assert (settings.observability.log_format, settings.observability.access_log, settings.observability.access_log_probes) == (
        "text", "text", False)
    settings = read_settings({"PREDICT_MODELS": {}, "PREDICT_LOG_FORMAT": "json"})
    assert settings.observability.log_format == "json" and settings.observability.access_log == "json"
    settings = read_settings({"PREDICT_MODELS": {}, "PREDICT_LOG_FORMAT": "json",
                              "PREDICT_ACCESS_LOG": False})
    assert settings.observability.access_log is None
    assert read_settings({"PREDICT_MODELS": {}, "PREDICT_ACCESS_LOG": "json"}).observability.log_format \
        == "json"


def test_json_lines_carry_the_request_id_and_the_traceback() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    use_json([handler])
    logger = logging.getLogger("tests.logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("outside %s", "a request")
        record = RequestRecord("tfserving", "predict", "req-7", True, 0)
        current_request.set(record)
        try:
            try:
                raise RuntimeError("boom\nsecond line")
            except RuntimeError:
                logger.exception("inside")
        finally:
            current_request.set(None)
    finally:
        logger.removeHandler(handler)
    first, second = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert {k: first[k] for k in ("level", "logger", "message")} == {
        "level": "WARNING", "logger": "tests.logs", "message": "outside a request"}
    assert "request_id" not in first and first["pid"] > 0 and first["time"] > 0
    assert second["request_id"] == "req-7" and second["level"] == "ERROR"
    assert second["exception"].startswith("Traceback (most recent call last):")
    assert second["exception"].endswith("RuntimeError: boom\nsecond line")


def test_any_value_prints() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s", (object(),), None)
    assert json.loads(JsonFormatter().format(record))["message"].startswith("<object")
    record.exc_info = sys.exc_info()
    assert "exception" not in json.loads(JsonFormatter().format(record))
