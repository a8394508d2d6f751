"""The AI Platform blueprint and its error handler: Google's envelope where a view asks for
it (:class:`GoogleError`), AI Platform's ``{"error": "<message>"}`` otherwise."""

from __future__ import annotations

from flask import Blueprint
from flask.typing import ResponseReturnValue

from ...web.protocol_http import error_handler, json_error
from .envelope import GoogleError, envelope

bp = Blueprint("predict_aiplatform", __name__)


def render_error(exc: Exception) -> ResponseReturnValue:
    return envelope(exc) if isinstance(exc, GoogleError) else json_error(exc)


# the host app's own HTTP errors (its auth, its rate limiter) pass to its own handlers
bp.register_error_handler(Exception, error_handler(render_error))
