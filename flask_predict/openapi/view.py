"""``GET /openapi.json`` (``PREDICT_OPENAPI_ROUTE``): the document of this app's routes."""

from __future__ import annotations

from flask import Blueprint, Response
from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from ..core.state import EXTENSION_KEY
from ..web.current import get_state
from .document import BLUEPRINT, build_document, dumps

bp = Blueprint(BLUEPRINT, __name__)


@bp.record
def add_route(setup: BlueprintSetupState) -> None:
    """Serve the document at the configured route (under ``PREDICT_URL_PREFIX``)."""
    route = setup.app.extensions[EXTENSION_KEY].settings.pages.openapi_route
    if route:
        setup.add_url_rule(route, "document", document, methods=["GET"])


def document() -> ResponseReturnValue:
    return Response(dumps(build_document(get_state().settings)), mimetype="application/json")
