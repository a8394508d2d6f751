"""The tally part of the OpenAPI document."""

from __future__ import annotations

from flask_predict.settings.config import Settings
from flask_predict.openapi.schemas import ANY, Part, Schema, errors, json_body, operation, \
    path_param, response

TAG = "Tally"


def components() -> Schema:
    return {}


def paths(settings: Settings) -> dict[str, Schema]:
    body = json_body({"type": "object", "properties": {"instances": {"type": "array",
                                                                     "items": ANY}}})
    return {"/tally/v1/{model}": {"post": operation(
        "tallyCount", TAG, "Count with a model",
        {"200": response("The predictions.", {"type": "object"}),
         **errors("Error", 400, 404, 413, 500, 503)},
        [path_param("model", "The model.")], body)}}


PART = Part(TAG, "A protocol made for the tests.", components, paths)
