"""What every protocol view needs from HTTP: a bounded body, JSON in, JSON out, errors."""

from __future__ import annotations

import logging
import zlib
from typing import Any, Callable

from flask import Response, current_app, request
from flask.globals import _cv_request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import ClientDisconnected, HTTPException, RequestEntityTooLarge
from werkzeug.routing import RoutingException

from .. import codecs
from ..runtime import memory
from ..request.record import current_request
from ..core.scope import probe_answer
from ..core.state import PredictState
from ..errors import InvalidInput, PayloadTooLarge, PredictError
from .current import get_state
from ..request.body import parse_json

logger = logging.getLogger("flask_predict.protocols")

JSON_MIMETYPE = "application/json"

ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
             "deflate": zlib.MAX_WBITS}
"""``Content-Encoding`` -> zlib window bits (what TF Serving and tritonclient send)."""


def request_state() -> PredictState:
    """The app state the request being answered belongs to: its scope holds it (one
    look-up), so a view asks once and hands it on."""
    record = current_request.get()
    if record is not None:
        state: PredictState = record.state
        return state
    return get_state()


def wsgi_environ() -> dict[str, Any]:
    """The request's WSGI environ, looked up without the ``request`` proxy (about a
    microsecond a look-up): views read headers from it where Werkzeug's parsed-header
    properties would cost more than the rest of a one-row request."""
    environ: dict[str, Any] = _cv_request.get().request.environ
    return environ


def read_body(state: PredictState) -> bytes:
    """The request body, inflated per its ``Content-Encoding``: at most
    ``PREDICT_MAX_REQUEST_BYTES`` as sent and once inflated (413 past either), and at most
    ``PREDICT_MAX_INFLATE_RATIO`` times its compressed size."""
    settings = state.settings
    limit = settings.max_request_bytes
    environ = wsgi_environ()
    body = _read_raw(environ, limit)
    encoding = environ.get("HTTP_CONTENT_ENCODING")
    if encoding is not None:
        body = inflate(body, encoding, limit, settings.limits.max_inflate_ratio)
    memory.note_size(environ, len(body))
    return body


def _read_raw(environ: dict[str, Any], limit: int) -> bytes:
    length = _content_length(environ)
    if length is not None and length > limit:
        raise PayloadTooLarge(f"request body of {length} bytes is over the limit of "
                              f"{limit} bytes")
    try:
        if length is not None:
            return _read_exactly(environ, length)
        data: bytes = request.stream.read(limit + 1)
    except RequestEntityTooLarge:
        raise PayloadTooLarge("request body is over the server's size limit")
    except ClientDisconnected:
        raise InvalidInput("the request body ended early")
    except (HTTPException, PredictError):
        raise
    except Exception as exc:  # the server's own reader refused the framing (a bad chunk)
        raise InvalidInput(f"the request body could not be read: {str(exc)[:200]}") from exc
    if len(data) > limit:
        raise PayloadTooLarge(f"request body is over the limit of {limit} bytes")
    return data


def _content_length(environ: dict[str, Any]) -> int | None:
    """``Content-Length`` as Werkzeug reads it (``request.content_length``): none for a
    chunked body or a value that is not a number, else at least 0."""
    if "HTTP_TRANSFER_ENCODING" in environ:
        return request.content_length
    value = environ.get("CONTENT_LENGTH")
    if value is None or not value.isdigit() or not value.isascii():
        return request.content_length
    return int(value)


def _read_exactly(environ: dict[str, Any], length: int) -> bytes:
    """A body of known length in one read from the server's input stream: a 2 MB body
    through Werkzeug's 64 KiB chunks costs a copy and a loop more."""
    if environ.get("wsgi.input_terminated"):
        return request.get_data(cache=True)
    data: bytes = environ["wsgi.input"].read(length)
    if len(data) != length:
        raise ClientDisconnected()
    return data


def inflate(body: bytes, encoding: str | None, limit: int, ratio: int) -> bytes:
    """*body* decoded per its ``Content-Encoding`` (gzip, deflate or identity), never more
    than *limit* bytes nor *ratio* times its own size: the work a small compressed body can
    cause is bounded before it is done. Concatenated gzip members are read in turn."""
    name = (encoding or "identity").strip().lower()
    if name == "identity" or not body and name in ENCODINGS:
        return body
    if name not in ENCODINGS:
        raise InvalidInput(f"unsupported Content-Encoding {encoding!r}; use gzip or deflate")
    budget = min(limit, ratio * len(body))
    parts: list[bytes] = []
    left, rest = budget + 1, body
    while rest and left > 0:
        decoder = zlib.decompressobj(ENCODINGS[name])
        try:
            part = decoder.decompress(rest, left)
        except zlib.error as exc:
            raise InvalidInput(f"the {name} request body is corrupt: {exc}")
        parts.append(part)
        left -= len(part)
        if left <= 0:
            break
        if not decoder.eof:
            raise InvalidInput(f"the {name} request body is truncated")
        rest = decoder.unused_data if name != "deflate" else b""
        if decoder.unused_data and name == "deflate":
            raise InvalidInput("the deflate request body has data after its end")
    data = b"".join(parts)
    if len(data) > budget:
        why = (f"more than {limit} bytes" if budget == limit else
               f"more than {ratio} times its size ({len(body)} bytes)")
        raise PayloadTooLarge(f"the {name} request body inflates to {why}")
    return data


def read_json(state: PredictState) -> Any:
    """The body parsed as JSON (``NaN``/``Infinity`` allowed); 400 when it is not JSON.

    The Content-Type is not checked: clients that send none are served.
    """
    return parse_json(read_body(state), state.settings.limits)


def json_response(payload: Any, status: int = 200) -> Response:
    """*payload* printed by the codec (numpy values allowed, NaN printed as ``NaN``)."""
    return Response(codecs.dumps(payload), status=status, mimetype=JSON_MIMETYPE)


def json_text(text: bytes, status: int = 200) -> Response:
    """An answer already printed as JSON."""
    return Response(text, status=status, mimetype=JSON_MIMETYPE)


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
    if probe_answer(error):
        return error
    if error.http_status >= 500:
        logger.error("%s %s: %s%s", request.method, request.path, error.message, error.detail,
                     exc_info=exc if error.log_traceback else None)
    else:
        logger.info("%s %s: %s", request.method, request.path, error.message)
    return error


def error_handler(render: Callable[[Exception], ResponseReturnValue]
                  ) -> Callable[[Exception], ResponseReturnValue]:
    """A blueprint's error handler: the extension's own errors (and unexpected ones) in the
    protocol's format, by *render*; an HTTP error the host app raised (its auth, its rate
    limiter, ``abort()`` in its ``before_request``) goes to the host app's own error handlers
    untouched, or answers as Werkzeug renders it."""
    def handle(exc: Exception) -> ResponseReturnValue:
        if isinstance(exc, HTTPException):
            return host_http_error(exc)
        return render(exc)

    return handle


def host_http_error(exc: HTTPException) -> ResponseReturnValue:
    """What the app would answer for *exc* if this blueprint had no error handler."""
    if isinstance(exc, RoutingException) or exc.code is None:
        return exc
    find = getattr(current_app, "_find_error_handler", None)  # Flask >= 2.0.1
    handler = find(exc, []) if find is not None else None
    if handler is None:
        return exc
    answer: ResponseReturnValue = current_app.ensure_sync(handler)(exc)
    return answer


def json_error(exc: Exception) -> Response:
    """The ``{"error": "<message>"}`` body that AI Platform, TF Serving and V2 share."""
    error = as_predict_error(exc)
    return json_response({"error": error.message}, error.http_status)


def plain_error(exc: Exception, challenge: str) -> Response:
    """A plain-text error for routes outside the protocols (metrics, status page), with
    the ``WWW-Authenticate`` *challenge* on a 401."""
    error = as_predict_error(exc)
    headers = {"WWW-Authenticate": challenge} if error.http_status == 401 else {}
    return Response(error.message + "\n", status=error.http_status, mimetype="text/plain",
                    headers=headers)
