"""Google's error envelope, and the checks whose failures it carries.

Google APIs answer errors as ``{"error": {"code": 404, "message": "...", "status":
"NOT_FOUND"}}`` with a canonical status name; Google's client libraries read ``message``
from it (with a string ``error`` they show only the HTTP reason, or fail). AI Platform
answers its routing errors this way, and Vertex AI's API every error.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from flask import Response
from flask.typing import ResponseReturnValue

from . import settings
from ...core.state import PredictState
from ...errors import Code, ModelNotFound
from ...web.protocol_http import as_predict_error, json_response

STATUS: dict[Code, tuple[int, str]] = {
    Code.INVALID_ARGUMENT: (400, "INVALID_ARGUMENT"),
    Code.FAILED_PRECONDITION: (400, "FAILED_PRECONDITION"),
    Code.NOT_FOUND: (404, "NOT_FOUND"),
    Code.UNAVAILABLE: (503, "UNAVAILABLE"),
    Code.UNIMPLEMENTED: (501, "UNIMPLEMENTED"),
    Code.INTERNAL: (500, "INTERNAL"),
    Code.PAYLOAD_TOO_LARGE: (400, "INVALID_ARGUMENT"),
    Code.UNAUTHENTICATED: (401, "UNAUTHENTICATED"),
    Code.PERMISSION_DENIED: (403, "PERMISSION_DENIED"),
}
"""Our error code -> Google's HTTP status and canonical name (an oversized body is Google's
400 ``INVALID_ARGUMENT``, ``Request payload size exceeds the limit``)."""


class GoogleError(Exception):
    """An error answered in Google's envelope, whatever the route answers otherwise."""

    def __init__(self, cause: Exception, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.details = details


def not_found(message: str, field: str | None = None) -> GoogleError:
    """A 404 ``NOT_FOUND``; with *field*, AI Platform's ``BadRequest`` detail naming it."""
    details = None
    if field is not None:
        details = [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": field, "description": message}]}]
        message = f"Field: {field} Error: {message}"
    return GoogleError(ModelNotFound(message), details)


def envelope(exc: Exception) -> Response:
    """*exc* (logged as the other protocols log theirs) in Google's envelope."""
    details = exc.details if isinstance(exc, GoogleError) else None
    error = as_predict_error(exc.cause if isinstance(exc, GoogleError) else exc)
    status, name = STATUS[error.code]
    body: dict[str, Any] = {"code": status, "message": error.message, "status": name}
    if details:
        body["details"] = details
    return json_response({"error": body}, status)


def enveloped(view: Callable[..., ResponseReturnValue]) -> Callable[..., ResponseReturnValue]:
    """Answer every error *view* raises in Google's envelope."""

    @functools.wraps(view)
    def wrapper(**kwargs: Any) -> ResponseReturnValue:
        try:
            return view(**kwargs)
        except GoogleError:
            raise
        except Exception as exc:
            raise GoogleError(exc) from exc

    return wrapper


def project_allowed(state: PredictState, project: str) -> bool:
    """Whether ``PREDICT_AIPLATFORM_PROJECTS`` (default: any project) accepts *project*."""
    projects = settings.of(state.settings).projects
    return projects is None or project in projects
