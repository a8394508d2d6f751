"""The state of the current Flask app, for views outside a request's scope (the status
page, ``/metrics``, the OpenAPI route) and the helpers they share."""

from __future__ import annotations

from flask import current_app
from flask.globals import _cv_app

from ..core.state import EXTENSION_KEY, PredictState


def get_state() -> PredictState:
    """The state of the current app (what views use instead of a global).

    Read from Flask's app context variable itself: through the ``current_app`` proxy the
    look-up costs several times more."""
    context = _cv_app.get(None)
    app = current_app if context is None else context.app  # the proxy raises outside one
    state: PredictState = app.extensions[EXTENSION_KEY]
    return state
