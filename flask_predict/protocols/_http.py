"""What every protocol view needs from HTTP: a bounded body, JSON in, JSON out, errors."""

from __future__ import annotations

import logging
from typing import Any

from flask import Response, request
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge

from .. import codecs
from ..errors import InvalidInput, PayloadTooLarge, PredictError
from ..state import get_state

logger = logging.getLogger("flask_predict.protocols")

JSON_MIMETYPE = "application/json"


def read_body() -> bytes:
    """The request body, at most ``PREDICT_MAX_REQUEST_BYTES`` long (413 past that)."""
    limit = get_state().settings.max_request_bytes
    length = request.content_length
    if length is not None and length > limit:
        raise PayloadTooLarge(f"request body of {length} bytes is over the limit of "
                              f"{limit} bytes")
    try:
        if length is not None:
            return _read_exactly(length)
        data: bytes = request.stream.read(limit + 1)
    except RequestEntityTooLarge:
        raise PayloadTooLarge("request body is over the server's size limit")
    except ClientDisconnected:
        raise InvalidInput("the request body ended early")
    if len(data) > limit:
        raise PayloadTooLarge(f"request body is over the limit of {limit} bytes")
    return data


def _read_exactly(length: int) -> bytes:
    """A body of known length in one read from the server's input stream: a 2 MB body
    through Werkzeug's 64 KiB chunks costs a copy and a loop more."""
    environ = request.environ
    if environ.get("wsgi.input_terminated"):
        return request.get_data(cache=True)
    data: bytes = environ["wsgi.input"].read(length)
    if len(data) != length:
        raise ClientDisconnected()
    return data


def read_json() -> Any:
    """The body parsed as JSON (``NaN``/``Infinity`` allowed); 400 when it is not JSON.

    The Content-Type is not checked: clients that send none are served.
    """
    return parse_json(read_body())


def parse_json(body: bytes) -> Any:
    """*body* parsed as :func:`read_json` parses it."""
    if not body or body.isspace():
        raise InvalidInput("JSON Parse error: The document is empty")
    return codecs.loads(body)


def read_json_object() -> dict[str, Any]:
    """The body as a JSON object; 400 for any other JSON value."""
    body = read_json()
    if not isinstance(body, dict):
        raise InvalidInput(f"the request body must be a JSON object, got {json_kind(body)}")
    return body


def json_response(payload: Any, status: int = 200) -> Response:
    """*payload* printed by the codec (numpy values allowed, NaN printed as ``NaN``)."""
    return Response(codecs.dumps(payload), status=status, mimetype=JSON_MIMETYPE)


def as_predict_error(exc: Exception) -> PredictError:
    """Any exception raised in a view as a :class:`PredictError`, logged once.

    Client mistakes are logged at INFO without a traceback; failures once, with it. The
    message of an unexpected exception never reaches the client.
    """
    if isinstance(exc, PredictError):
        error = exc
    elif isinstance(exc, HTTPException) and (exc.code or 500) < 500:
        error = InvalidInput(exc.description or exc.name)
    else:
        error = PredictError("internal server error")
    if error.http_status >= 500:
        logger.error("%s %s: %s", request.method, request.path, error.message, exc_info=exc)
    else:
        logger.info("%s %s: %s", request.method, request.path, error.message)
    return error


def json_error(exc: Exception) -> Response:
    """The ``{"error": "<message>"}`` body that AI Platform, TF Serving and V2 share."""
    error = as_predict_error(exc)
    return json_response({"error": error.message}, error.http_status)


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, for messages: "an array", "a string", ..."""
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")
