"""Pieces every protocol's part of the OpenAPI document uses: references, parameters,
responses and the schemas shared between protocols."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ..settings.config import Settings

Schema = dict[str, Any]
"""A JSON Schema (OpenAPI 3.1 uses JSON Schema 2020-12) or any other document object."""



class Part(NamedTuple):
    """One protocol's share of the document."""

    tag: str
    description: str
    components: Callable[[], Schema]
    """Its ``components`` (schemas, parameters), named with the protocol's prefix."""
    paths: Callable[[Settings], dict[str, Schema]]
    """Its path items, without ``PREDICT_URL_PREFIX``."""


JSON = "application/json"
BINARY = "application/octet-stream"

SEGMENT = "^[^/]+$"
"""A URL path segment: what Flask's default ``<name>`` converter matches."""


def ref(name: str) -> Schema:
    """A reference to the schema *name* in ``components/schemas``."""
    return {"$ref": f"#/components/schemas/{name}"}


def param(name: str) -> Schema:
    """A reference to the parameter *name* in ``components/parameters``."""
    return {"$ref": f"#/components/parameters/{name}"}


def path_param(name: str, description: str, pattern: str = SEGMENT,
               example: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "pattern": pattern}
    parameter: Schema = {"name": name, "in": "path", "required": True,
                         "description": description, "schema": schema}
    if example is not None:
        parameter["example"] = example
    return parameter


def query_param(name: str, description: str, schema: Schema,
                example: str | None = None) -> Schema:
    parameter: Schema = {"name": name, "in": "query", "required": False,
                         "description": description, "schema": schema}
    if example is not None:
        parameter["example"] = example
    return parameter


ROW = [5.1, 3.5, 1.4, 0.2]
"""The features of one iris flower: what the examples send to the demo's ``iris`` model."""


def json_body(schema: Schema, description: str = "", example: Any = None) -> Schema:
    """A request body of JSON (``NaN``, ``Infinity`` and ``-Infinity`` are accepted too)."""
    media: Schema = {"schema": schema}
    if example is not None:
        media["example"] = example
    body: Schema = {"required": True, "content": {JSON: media}}
    if description:
        body["description"] = description
    return body


def content(schema: Schema, media_type: str = JSON) -> Schema:
    return {media_type: {"schema": schema}}


def response(description: str, schema: Schema | None = None,
             media_type: str = JSON) -> Schema:
    """A response with a body of *media_type* (none when *schema* is ``None``)."""
    answer: Schema = {"description": description}
    if schema is not None:
        answer["content"] = content(schema, media_type)
    return answer


ERROR_MEANINGS = {
    400: "The request is malformed or does not fit the model.",
    401: "A token is required (`PREDICT_AUTH_TOKENS`, or an admin token for a route that "
         "changes the server); `WWW-Authenticate` says how.",
    403: "The route changes the server's state: served to loopback clients or with an admin "
         "token only.",
    404: "No such model or version.",
    413: "The request body is over `PREDICT_MAX_REQUEST_BYTES`.",
    500: "The model failed; the message is generic, the cause is in the server's log.",
    503: "The model has no version loaded yet.",
}


def errors(body: str, *codes: int) -> dict[str, Schema]:
    """The error responses *codes*, each with the error schema *body*."""
    return {str(code): response(ERROR_MEANINGS[code], ref(body)) for code in codes}


def operation(operation_id: str, tag: str, summary: str, responses: dict[str, Schema],
              parameters: list[Schema] | None = None, body: Schema | None = None,
              description: str = "") -> Schema:
    """One OpenAPI operation object."""
    op: Schema = {"operationId": operation_id, "tags": [tag], "summary": summary}
    if description:
        op["description"] = description
    if parameters:
        op["parameters"] = parameters
    if body is not None:
        op["requestBody"] = body
    op["responses"] = responses
    return op


ANY: Schema = {}
"""Any JSON value."""

STRING_ERROR: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "What went wrong."}},
    "description": "The error body AI Platform, TF Serving and the V2 protocol share.",
}

SHAPE: Schema = {"type": "array", "items": {"type": "integer"},
                 "description": "Dimensions; -1 is a dimension of any size."}

PARAMETERS: Schema = {"type": "object", "description": "Free-form parameters."}

ATTRIBUTION: Schema = {
    "type": "object",
    "required": ["baselineOutputValue", "instanceOutputValue", "featureAttributions",
                 "approximationError", "outputName"],
    "properties": {
        "baselineOutputValue": {"type": "number", "description": "The output explained when "
                                "no feature is known: the attributions start from it."},
        "instanceOutputValue": {"type": "number", "description": "The raw output explained, "
                                "as the model computes it for the instance."},
        "featureAttributions": {"type": "object", "additionalProperties": {
            "type": ["number", "array"]}, "description": "Input (or column) name -> its "
            "attribution: a number for a column, one per feature for a row of features."},
        "outputIndex": {"type": "array", "items": {"type": "integer"}, "description": "Which "
                        "of several explained outputs (a multiclass model's class)."},
        "outputDisplayName": {"type": "string", "description": "The explained output's class."},
        "approximationError": {"type": "number", "description": "|instanceOutputValue - "
                               "(baselineOutputValue + the attributions)|: the model's "
                               "rounding, the attributions being exact."},
        "outputName": {"type": "string", "examples": ["margin", "decision_function"]},
    },
}

EXPLANATION: Schema = {
    "type": "object",
    "required": ["attributions"],
    "properties": {"attributions": {"type": "array", "items": ATTRIBUTION}},
    "description": "Google's `Explanation` of one instance: one attribution per explained "
                   "output.",
}


def shared_components() -> Schema:
    """The components every document holds, whichever protocols it describes."""
    return {"schemas": {"Error": STRING_ERROR, "Explanation": EXPLANATION},
            "parameters": {"model": path_param("model", "A configured model's name.",
                                               example="iris")}}
