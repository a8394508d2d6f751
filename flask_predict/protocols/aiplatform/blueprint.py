"""The AI Platform blueprint and its error handler: Google's envelope where a view asks for
it (:class:`GoogleError`), AI Platform's ``{"error": "<message>"}`` otherwise."""

from __future__ import annotations

from flask import Blueprint
from flask.typing import ResponseReturnValue

from .._http import json_error
from .envelope import GoogleError, envelope

bp = Blueprint("predict_aiplatform", __name__)


@bp.errorhandler(Exception)
def handle_error(exc: Exception) -> ResponseReturnValue:
    return envelope(exc) if isinstance(exc, GoogleError) else json_error(exc)
