"""A V2 REST body's JSON, refused in Triton's words (its clients and tests look for them):
``failed to parse the request JSON buffer: <reason> at <offset>`` (``triton_json.h``, which
every Triton route that reads a body uses), and for tensor data nested deeper than Triton's
100 levels, ``JSON nesting depth exceeds maximum allowed limit (100)``
(``PREDICT_KSERVE_V2_MAX_JSON_DEPTH``). No Flask here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

from ... import codecs
from ...errors import InvalidInput
from ...types import Limits
from ...request.body import parse_json
from .settings import KserveV2Settings

PARSE_ERROR = "failed to parse the request JSON buffer: "
EMPTY = "The document is empty."
"""RapidJSON's reason for an empty body (``kParseErrorDocumentEmpty``)."""

_POSITION = re.compile(r":?\s*line \d+ column \d+(?: - line \d+ column \d+)? "
                       r"\(char (\d+)(?: - \d+)?\)")
"""Where the parser (simplejson's words) says the error is: its offset is ``char``."""

RAPIDJSON = (
    ("Expecting value", "Invalid value."),
    ("Illegal trailing comma before end of array", "Invalid value."),
    ("Expecting property name", "Missing a name for object member."),
    ("Illegal trailing comma before end of object", "Missing a name for object member."),
    ("Expecting ':' delimiter", "Missing a colon after a name of object member."),
    ("Expecting ',' delimiter or ']'", "Missing a comma or ']' after an array element."),
    ("Expecting ',' delimiter or '}'", "Missing a comma or '}' after an object member."),
    ("Unterminated string", "Missing a closing quotation mark in string."),
    ("Extra data", "The document root must not be followed by other values."),
)
"""The parser's reason (its first words) -> RapidJSON's (``GetParseError_En``), which
Triton prints."""


def parse(body: bytes, limits: Limits, section: KserveV2Settings,
          parser: Callable[[bytes], Any] = codecs.loads) -> Any:
    """*body* parsed, with ``data`` at most ``PREDICT_KSERVE_V2_MAX_JSON_DEPTH`` levels
    deep; Triton's words when it is empty, not JSON or nested too deeply."""
    if not body or body.isspace():
        raise InvalidInput(f"{PARSE_ERROR}{EMPTY} at {len(body)}")
    depth = section.max_body_depth
    try:
        document = parse_json(body, _deeper(limits, depth), parser)
    except InvalidInput as exc:
        if "nested too deeply" in exc.message:
            raise InvalidInput(too_deep(section.max_data_depth)) from None
        raise InvalidInput(f"{PARSE_ERROR}{_reason(exc.message)} at "
                           f"{_offset(exc.message)}") from None
    return document


def too_deep(limit: int) -> str:
    return f"JSON nesting depth exceeds maximum allowed limit ({limit})"


def _deeper(limits: Limits, depth: int) -> Limits:
    """*limits* with the V2 routes' own nesting limit."""
    return replace(limits, max_json_depth=depth)


def _reason(message: str) -> str:
    """The parser's reason in RapidJSON's words where it has them, without its position."""
    reason = _POSITION.sub("", message.removeprefix("JSON Parse error: ")).strip()
    for ours, theirs in RAPIDJSON:
        if reason.startswith(ours):
            return theirs
    return reason if reason.endswith(".") else f"{reason}."


def _offset(message: str) -> int:
    match = _POSITION.search(message)
    return 0 if match is None else int(match[1])
