"""AI Platform ``projects.predict`` and the model/version descriptions; Vertex AI's
custom-container routes when the settings name them."""

from __future__ import annotations

from ..config import Settings
from .schemas import (ANY, PARAMETERS, ROW, Part, Schema, errors, json_body, operation, param,
                      path_param, ref, response)

TAG = "AI Platform"
DESCRIPTION = ("Google AI Platform Prediction `projects.predict`, and Vertex AI custom "
               "container routes. Errors are `{\"error\": \"<message>\"}`.")

PREDICT_REQUEST: Schema = {
    "type": "object",
    "required": ["instances"],
    "properties": {
        "instances": {"type": "array", "minItems": 1, "items": ANY,
                      "description": "One entry per instance, in the model's input format."},
        "parameters": {**PARAMETERS, "description": "Vertex AI's parameters; a custom "
                       "predictor receives them as the keyword argument `parameters`."},
        "signature_name": {"type": "string",
                           "description": "The TensorFlow signature to run."},
    },
    "additionalProperties": True,
    "description": "Every top-level key other than `instances` reaches a custom predictor as "
                   "a keyword argument.",
}

PREDICT_RESPONSE: Schema = {
    "type": "object",
    "required": ["predictions"],
    "properties": {"predictions": {"type": "array", "items": ANY,
                                   "description": "One per instance, in order."}},
}

VERSION: Schema = {
    "type": "object",
    "required": ["name", "state", "isDefault"],
    "properties": {
        "name": {"type": "string", "examples": ["projects/demo/models/iris/versions/1"]},
        "state": {"type": "string", "enum": ["READY"]},
        "isDefault": {"type": "boolean"},
        "framework": {"type": "string", "enum": ["SCIKIT_LEARN", "XGBOOST", "TENSORFLOW"]},
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
                    "AIPlatformVersion": VERSION, "AIPlatformModel": MODEL},
        "parameters": {
            "project": path_param("project", "Any project name; it is not checked.",
                                  example="demo"),
            "aiplatformVersion": path_param(
                "version", "A version name from the model's `version_labels`, else a "
                "version number.", example="1"),
        },
    }


def paths(settings: Settings) -> dict[str, Schema]:
    base = "/v1/projects/{project}/models/{model}"
    version = "/versions/{version}"
    model_params = [param("project"), param("model")]
    version_params = [*model_params, param("aiplatformVersion")]
    predict_body = json_body(ref("AIPlatformPredictRequest"), example={"instances": [ROW]})
    predicted = {"200": response("The predictions.", ref("AIPlatformPredictResponse")),
                 **errors("Error", 400, 404, 413, 500, 503)}
    items: dict[str, Schema] = {
        f"{base}:predict": {"post": operation(
            "aiplatformPredict", TAG, "Predict with the model's default version",
            predicted, model_params, predict_body)},
        f"{base}{version}:predict": {"post": operation(
            "aiplatformPredictVersion", TAG, "Predict with one version", predicted,
            version_params, predict_body)},
        base: {"get": operation(
            "aiplatformGetModel", TAG, "Describe a model (`projects.models.get`)",
            {"200": response("The model and its default version.", ref("AIPlatformModel")),
             **errors("Error", 400, 404, 503)}, model_params)},
        f"{base}{version}": {"get": operation(
            "aiplatformGetVersion", TAG, "Describe a version (`projects.models.versions.get`)",
            {"200": response("The version.", ref("AIPlatformVersion")),
             **errors("Error", 400, 404, 503)}, version_params)},
    }
    if settings.vertex_predict_route:
        items[settings.vertex_predict_route] = {"post": operation(
            "vertexPredict", TAG, "Vertex AI custom container predict route "
            "(`AIP_PREDICT_ROUTE`)", predicted, body=predict_body,
            description="Serves `PREDICT_VERTEX_MODEL`, or the only configured model.")}
    if settings.vertex_health_route:
        items[settings.vertex_health_route] = {"get": operation(
            "vertexHealth", TAG, "Vertex AI custom container health route "
            "(`AIP_HEALTH_ROUTE`)",
            {"200": response("Every model is loaded in this worker.",
                             {"type": "object", "maxProperties": 0}),
             **errors("Error", 503)})}
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
