"""AI Platform's ``ml v1`` (``projects.predict`` and ``projects.explain``, the model/version
GETs), Vertex AI's endpoints (``:predict``, ``:rawPredict``, ``:explain``), and Vertex AI's custom-container routes when the
settings name them."""

from __future__ import annotations

from ...openapi.schemas import (ANY, PARAMETERS, ROW, Part, Schema, errors, json_body, operation,
                                param, path_param, ref, response)
from ...settings.config import Settings
from .settings import of

TAG = "AI Platform"
DESCRIPTION = ("Google AI Platform Prediction (`ml v1`) and Vertex AI (`aiplatform v1`) "
               "endpoints, and Vertex AI custom container routes. Routing errors, and every "
               "error of Vertex AI's `:predict`, are Google's envelope `{\"error\": {\"code\", "
               "\"message\", \"status\"}}`; a failed prediction is `{\"error\": \"<message>\"}`.")

PREDICT_REQUEST: Schema = {
    "type": "object",
    "required": ["instances"],
    "properties": {
        "instances": {"type": "array", "minItems": 1, "items": ANY,
                      "description": "One entry per instance, in the model's input format."},
        "parameters": {**PARAMETERS, "description": "Vertex AI's parameters; a custom "
                       "predictor receives them as the keyword argument `parameters`."},
        "signature_name": {"description": "The TensorFlow signature to run (a string); a "
                                          "custom predictor receives any value."},
    },
    "additionalProperties": True,
    "description": "Every top-level key other than `instances` reaches a custom predictor as "
                   "a keyword argument.",
}

VERTEX_REQUEST: Schema = {
    "type": "object",
    "required": ["instances"],
    "properties": {"instances": {"type": "array", "minItems": 1, "items": ANY},
                   "parameters": {**ANY, "description": "A custom predictor receives it as "
                                                        "the keyword argument `parameters`."}},
    "additionalProperties": False,
    "description": "Vertex AI's `PredictRequest`: any other key is refused, as Vertex AI "
                   "refuses it.",
}

PREDICT_RESPONSE: Schema = {
    "type": "object",
    "required": ["predictions"],
    "properties": {"predictions": {"type": "array", "items": ANY,
                                   "description": "One per instance, in order."}},
    "description": "A Vertex AI prediction routine answers what its `postprocess` returns, "
                   "as it is.",
}

VERTEX_RESPONSE: Schema = {
    "type": "object",
    "required": ["predictions", "deployedModelId", "model", "modelVersionId"],
    "properties": {
        "predictions": {"type": "array", "items": ANY},
        "deployedModelId": {"type": "string"},
        "model": {"type": "string",
                  "examples": ["projects/demo/locations/us-central1/models/iris"]},
        "modelDisplayName": {"type": "string"},
        "modelVersionId": {"type": "string"},
        "metadata": {**ANY, "description": "A Vertex AI prediction routine's `metadata`, "
                                           "where its answer has one."},
    },
}

EXPLAIN_RESPONSE: Schema = {
    "type": "object",
    "required": ["explanations"],
    "properties": {"explanations": {"type": "array", "items": ref("Explanation"),
                                    "description": "One per instance, in order."}},
}

VERTEX_EXPLAIN_REQUEST: Schema = {
    **VERTEX_REQUEST,
    "properties": {**VERTEX_REQUEST["properties"],
                   "deployedModelId": {"type": "string", "description": "The model the "
                                       "endpoint serves, if given."}},
    "description": "Vertex AI's `ExplainRequest`; `explanationSpecOverride` is refused (the "
                   "attributions are exact).",
}

VERTEX_EXPLAIN_RESPONSE: Schema = {
    "type": "object",
    "required": ["explanations", "deployedModelId", "predictions"],
    "properties": {"explanations": {"type": "array", "items": ref("Explanation")},
                   "deployedModelId": {"type": "string"},
                   "predictions": {"type": "array", "items": ANY}},
}

GOOGLE_ERROR: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["code", "message", "status"],
        "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                       "status": {"type": "string", "examples": ["NOT_FOUND"]},
                       "details": {"type": "array", "items": {"type": "object"}}}}},
    "description": "Google's error envelope: the HTTP status, a message and the canonical "
                   "status name.",
}

VERSION: Schema = {
    "type": "object",
    "required": ["name", "state", "isDefault"],
    "properties": {
        "name": {"type": "string", "examples": ["projects/demo/models/iris/versions/1"]},
        "state": {"type": "string", "enum": ["READY"]},
        "isDefault": {"type": "boolean"},
        "framework": {"type": "string", "enum": ["SCIKIT_LEARN", "XGBOOST", "TENSORFLOW",
                                                 "FRAMEWORK_UNSPECIFIED"]},
    },
}

MODEL: Schema = {
    "type": "object",
    "required": ["name", "defaultVersion"],
    "properties": {"name": {"type": "string", "examples": ["projects/demo/models/iris"]},
                   "defaultVersion": ref("AIPlatformVersion")},
}


def components() -> Schema:
    return {
        "schemas": {"AIPlatformPredictRequest": PREDICT_REQUEST,
                    "AIPlatformPredictResponse": PREDICT_RESPONSE,
                    "VertexPredictRequest": VERTEX_REQUEST,
                    "VertexPredictResponse": VERTEX_RESPONSE, "GoogleError": GOOGLE_ERROR,
                    "AIPlatformExplainResponse": EXPLAIN_RESPONSE,
                    "VertexExplainRequest": VERTEX_EXPLAIN_REQUEST,
                    "VertexExplainResponse": VERTEX_EXPLAIN_RESPONSE,
                    "AIPlatformVersion": VERSION, "AIPlatformModel": MODEL},
        "parameters": {
            "project": path_param("project", "A project; any, unless "
                                  "`PREDICT_AIPLATFORM_PROJECTS` lists them.", example="demo"),
            "aiplatformVersion": path_param(
                "version", "A version name from the model's `version_labels`, else a "
                "version number.", example="1"),
            "location": path_param("location", "Any location; it is not checked.",
                                   example="us-central1"),
            "endpoint": path_param("endpoint", "An endpoint id from "
                                   "`PREDICT_VERTEX_ENDPOINTS`, else a model's name.",
                                   example="iris"),
        },
    }


def paths(settings: Settings) -> dict[str, Schema]:
    model = "/v1/projects/{project}/models/{model}"
    endpoint = "/v1/projects/{project}/locations/{location}/endpoints/{endpoint}"
    version = "/versions/{version}"
    model_params = [param("project"), param("model")]
    version_params = [*model_params, param("aiplatformVersion")]
    endpoint_params = [param("project"), param("location"), param("endpoint")]
    example = {"instances": [ROW]}
    predict_body = json_body(ref("AIPlatformPredictRequest"), example=example)
    predicted = {"200": response("The predictions.", ref("AIPlatformPredictResponse")),
                 **errors("Error", 400, 413, 500), **errors("GoogleError", 404, 503)}
    explained = {"200": response("One explanation per instance.",
                                 ref("AIPlatformExplainResponse")),
                 **errors("Error", 400, 413, 500), **errors("GoogleError", 404, 503)}
    described = errors("GoogleError", 404, 503)
    items: dict[str, Schema] = {
        f"{model}:predict": {"post": operation(
            "aiplatformPredict", TAG, "Predict with the model's default version",
            predicted, model_params, predict_body)},
        f"{model}{version}:predict": {"post": operation(
            "aiplatformPredictVersion", TAG, "Predict with one version", predicted,
            version_params, predict_body)},
        f"{model}:explain": {"post": operation(
            "aiplatformExplain", TAG, "Explain with the model's default version "
            "(`projects.explain`)", explained, model_params, predict_body)},
        f"{model}{version}:explain": {"post": operation(
            "aiplatformExplainVersion", TAG, "Explain with one version", explained,
            version_params, predict_body)},
        model: {"get": operation(
            "aiplatformGetModel", TAG, "Describe a model (`projects.models.get`)",
            {"200": response("The model and its default version.", ref("AIPlatformModel")),
             **described}, model_params)},
        f"{model}{version}": {"get": operation(
            "aiplatformGetVersion", TAG, "Describe a version (`projects.models.versions.get`)",
            {"200": response("The version.", ref("AIPlatformVersion")), **described},
            version_params)},
        f"{endpoint}:predict": {"post": operation(
            "vertexEndpointPredict", TAG, "Predict with an endpoint (`endpoints.predict`)",
            {"200": response("The predictions and the deployed model.",
                             ref("VertexPredictResponse")),
             **errors("GoogleError", 400, 404, 500, 503)}, endpoint_params,
            json_body(ref("VertexPredictRequest"), example=example))},
        f"{endpoint}:explain": {"post": operation(
            "vertexEndpointExplain", TAG, "Explain with an endpoint (`endpoints.explain`)",
            {"200": response("The explanations, predictions and the deployed model.",
                             ref("VertexExplainResponse")),
             **errors("GoogleError", 400, 404, 413, 500, 503)}, endpoint_params,
            json_body(ref("VertexExplainRequest"), example=example))},
        f"{endpoint}:rawPredict": {"post": operation(
            "vertexEndpointRawPredict", TAG, "Predict with an endpoint, the body as a custom "
            "container takes it (`endpoints.rawPredict`)", predicted, endpoint_params,
            predict_body)},
    }
    section = of(settings)
    if section.vertex_predict_route:
        items[section.vertex_predict_route] = {"post": operation(
            "vertexPredict", TAG, "Vertex AI custom container predict route "
            "(`AIP_PREDICT_ROUTE`)",
            {"200": response("The predictions.", ref("AIPlatformPredictResponse")),
             **errors("Error", 400, 404, 413, 500, 503)}, body=predict_body,
            description="Serves `PREDICT_VERTEX_MODEL`, or the only configured model.")}
    if section.vertex_health_route:
        items[section.vertex_health_route] = {"get": operation(
            "vertexHealth", TAG, "Vertex AI custom container health route "
            "(`AIP_HEALTH_ROUTE`)",
            {"200": response("This worker serves the deployed model.",
                             {"type": "object", "maxProperties": 0}),
             **errors("Error", 503)})}
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
