"""One exception hierarchy for everything flask_predict raises on purpose.

Exceptions carry a protocol-neutral :class:`Code`, never an HTTP status. Each protocol's
error handler turns the code into its own status and body through :data:`HTTP_STATUS`.
"""

from __future__ import annotations

import difflib
import enum
from typing import Any, ClassVar


class Code(enum.Enum):
    """Canonical error codes (the gRPC set TF Serving maps), plus an oversized body."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    NOT_FOUND = "NOT_FOUND"
    UNAVAILABLE = "UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    INTERNAL = "INTERNAL"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"


HTTP_STATUS: dict[Code, int] = {
    Code.INVALID_ARGUMENT: 400,
    Code.FAILED_PRECONDITION: 400,
    Code.NOT_FOUND: 404,
    Code.UNAVAILABLE: 503,
    Code.DEADLINE_EXCEEDED: 504,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.PAYLOAD_TOO_LARGE: 413,
    Code.METHOD_NOT_ALLOWED: 405,
    Code.UNAUTHENTICATED: 401,
    Code.PERMISSION_DENIED: 403,
}
"""HTTP status for each code, as TF Serving's ``ToHTTPStatusCode`` maps them."""


class PredictError(Exception):
    """Base of every error flask_predict raises on purpose."""

    code: ClassVar[Code] = Code.INTERNAL
    log_traceback: ClassVar[bool] = True
    """Whether a server error of this kind is logged with its traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    @property
    def detail(self) -> str:
        """More for the log line than the client is told (never sent); may be empty."""
        return ""


def did_you_mean(word: str, choices: Any) -> str:
    """``; did you mean 'x'?`` for the closest of *choices*, or an empty string."""
    close = closest(word, choices)
    return f"; did you mean {close!r}?" if close else ""


def closest(word: str, choices: Any) -> str | None:
    """The one of *choices* that *word* most resembles (``difflib``), if any does."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def one_line(message: str, limit: int = 300) -> str:
    """A framework's message (often several lines of advice) as one line of an error: its
    first line that says something, cut at *limit* characters."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[:limit] + "..."


class InvalidInput(PredictError):
    """The request is malformed or does not fit the model (HTTP 400)."""

    code = Code.INVALID_ARGUMENT


class FailedPrecondition(PredictError):
    """The request is well formed but the model cannot answer it (HTTP 400)."""

    code = Code.FAILED_PRECONDITION


class CannotExplain(FailedPrecondition):
    """The model does not explain its predictions, whatever the instances (HTTP 400)."""


class ModelTooLarge(FailedPrecondition):
    """A model of the lazy tier needs more memory than its cap holds, even alone (HTTP 400;
    SageMaker's multi-model API answers 507)."""


class ModelExists(FailedPrecondition):
    """A model added by name is loaded already (HTTP 400; SageMaker's multi-model API
    answers 409)."""


class PayloadTooLarge(PredictError):
    """The request body is over the configured size limit (HTTP 413)."""

    code = Code.PAYLOAD_TOO_LARGE


class MethodNotAllowedError(PredictError):
    """A known route asked with a method it does not take (HTTP 405)."""

    code = Code.METHOD_NOT_ALLOWED


class Unauthenticated(PredictError):
    """No valid token came with a request that needs one (HTTP 401)."""

    code = Code.UNAUTHENTICATED


class PermissionDenied(PredictError):
    """The caller may not change the server's state (HTTP 403)."""

    code = Code.PERMISSION_DENIED


class ModelNotFound(PredictError):
    """No such model or version (HTTP 404)."""

    code = Code.NOT_FOUND


class ModelNotReady(PredictError):
    """The model exists but no version is loaded yet (HTTP 503). A state, not a fault:
    logged as one line, never with a traceback."""

    code = Code.UNAVAILABLE
    log_traceback = False


class Unavailable(PredictError):
    """The server cannot take the request now, and may later: a full batch queue, a
    scheduler shutting down (HTTP 503, gRPC ``UNAVAILABLE``). Logged as one line."""

    code = Code.UNAVAILABLE
    log_traceback = False


class Unimplemented(PredictError):
    """The model does not support this kind of request (HTTP 501)."""

    code = Code.UNIMPLEMENTED


class DeadlineExceeded(PredictError):
    """A predictor ran past its time limit (HTTP 504, gRPC ``DEADLINE_EXCEEDED``). Logged as
    one line saying where the predictor stopped, not as a traceback."""

    code = Code.DEADLINE_EXCEEDED
    log_traceback = False

    def __init__(self, message: str, stopped_at: str = "") -> None:
        super().__init__(message)
        self.stopped_at = stopped_at
        """``file:line in function`` of the predictor's code the limit stopped."""

    @property
    def detail(self) -> str:
        return f" (stopped at {self.stopped_at})" if self.stopped_at else ""


class PredictorFailed(PredictError):
    """A predictor raised while predicting (HTTP 500); the cause is chained, never shown."""

    code = Code.INTERNAL


class ConfigError(PredictError):
    """Bad settings or a model that cannot load. Raised at boot; never reaches a client."""


class UnreadableModel(ConfigError):
    """A model file that cannot be read: corrupt, cut short, empty, or not in the format its
    name says. Every plugin says it with this one shape, ``unreadable model file: <why>``,
    and it stops the server as any model that did not load."""

    def __init__(self, why: str) -> None:
        super().__init__(f"unreadable model file: {why}")


class PredictorNotFound(ConfigError):
    """No installed plugin provides the predictor a model asks for."""
