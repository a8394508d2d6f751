"""The tally routes: views of a few lines, through the one door."""

from __future__ import annotations

from flask import Blueprint
from flask.typing import ResponseReturnValue

from flask_predict.request import limits
from flask_predict.errors import InvalidInput, ModelNotFound
from flask_predict.web.protocol_http import (error_handler, json_error, json_response, read_json,
                                             request_state)

from . import settings

bp = Blueprint("predict_tally", __name__)


@bp.post("/tally/v1/<model>")
def count(model: str) -> ResponseReturnValue:
    state = request_state()
    body = read_json(state)
    instances = body.get("instances") if isinstance(body, dict) else None
    if not isinstance(instances, list) or not instances:
        raise InvalidInput("body needs a non-empty 'instances' list")
    limits.check_instances(state.settings.limits, len(instances))
    with state.service.use(model) as loaded:
        predictions = state.service.predict_instances(loaded, instances, {})
    return json_response({settings.of(state.settings).label: predictions})


@bp.route("/tally/v1/<path:rest>", methods=["GET", "PUT", "DELETE"])
def unknown_path(rest: str) -> ResponseReturnValue:
    raise ModelNotFound(f"unknown tally request: /tally/v1/{rest}")


bp.register_error_handler(Exception, error_handler(json_error))
