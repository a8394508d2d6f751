"""The TF Serving REST API: status, metadata, predict, classify, regress and KServe V1's
explain, each in its latest, ``/versions/<n>`` and ``/labels/<label>`` forms."""

from __future__ import annotations

from typing import Any

from ...openapi.schemas import (ANY, PARAMETERS, ROW, Part, Schema, errors, json_body, operation,
                                param, path_param, ref, response)
from ...settings.config import Settings

TAG = "TF Serving"
DESCRIPTION = ("TensorFlow Serving's REST API. Errors are `{\"error\": \"<message>\"}` with "
               "TF Serving's status codes and texts.")

FORMS: tuple[tuple[str, str, list[str]], ...] = (
    ("", "", []), ("/versions/{version}", "Version", ["tfservingVersion"]),
    ("/labels/{label}", "Label", ["label"]))
"""URL form, operationId suffix, extra path parameters."""

VERSION_STATUS: Schema = {
    "type": "object",
    "required": ["version", "state", "status"],
    "properties": {
        "version": {"type": "string", "pattern": "^[0-9]+$"},
        "state": {"type": "string",
                  "enum": ["UNKNOWN", "START", "LOADING", "AVAILABLE", "UNLOADING", "END"]},
        "status": {"type": "object", "required": ["error_code", "error_message"],
                   "properties": {"error_code": {"type": "string"},
                                  "error_message": {"type": "string"}}},
    },
}

STATUS: Schema = {
    "type": "object",
    "required": ["model_version_status"],
    "properties": {"model_version_status": {"type": "array",
                                            "items": ref("TFServingVersionStatus")}},
}

SIGNATURE_DEF: Schema = {
    "type": "object",
    "properties": {"inputs": {"type": "object"}, "outputs": {"type": "object"},
                   "method_name": {"type": "string"}},
    "description": "A SignatureDef in protobuf's JSON form.",
}

METADATA: Schema = {
    "type": "object",
    "required": ["model_spec", "metadata"],
    "properties": {
        "model_spec": {"type": "object", "required": ["name", "version"],
                       "properties": {"name": {"type": "string"},
                                      "signature_name": {"type": "string"},
                                      "version": {"type": "string"}}},
        "metadata": {"type": "object", "required": ["signature_def"], "properties": {
            "signature_def": {"type": "object", "required": ["signature_def"], "properties": {
                "signature_def": {"type": "object",
                                  "additionalProperties": ref("TFServingSignatureDef")}}}}},
    },
}

PREDICT_REQUEST: Schema = {
    "type": "object",
    "properties": {
        "signature_name": {"type": "string", "description": "Default `serving_default`."},
        "instances": {"type": "array", "minItems": 1, "items": ANY,
                      "description": "Row format: one value (or object of named inputs) "
                                     "per instance."},
        "inputs": {**ANY, "description": "Columnar format: the single input's value, or an "
                                         "object of named inputs."},
    },
    "description": "Exactly one of `instances` and `inputs`. Strings or `{\"b64\": ...}` for "
                   "string inputs; `NaN`, `Infinity`, `-Infinity` for floats.",
}

PREDICT_RESPONSE: Schema = {
    "anyOf": [
        {"type": "object", "required": ["predictions"],
         "properties": {"predictions": {"type": "array", "items": ANY}}},
        {"type": "object", "required": ["outputs"], "properties": {"outputs": ANY}},
    ],
    "description": "`predictions` answers the row format, `outputs` the columnar one.",
}

EXAMPLES_REQUEST: Schema = {
    "type": "object",
    "required": ["examples"],
    "properties": {
        "signature_name": {"type": "string"},
        "context": {**PARAMETERS, "description": "Features merged into every example."},
        "examples": {"type": "array", "minItems": 1, "items": {"type": "object"},
                     "description": "One object of features per example."},
    },
}

CLASSIFY_RESPONSE: Schema = {
    "type": "object",
    "required": ["results"],
    "properties": {"results": {"type": "array", "items": {"type": "array", "items": {
        "type": "array", "items": {"type": ["string", "number"]}, "minItems": 2,
        "maxItems": 2}}, "description": "`[label, score]` pairs per example."}},
}

EXPLAIN_RESPONSE: Schema = {
    "type": "object",
    "required": ["predictions", "explanations"],
    "properties": {"predictions": {"type": "array", "items": {}, "description": "As "
                                   "`:predict` answers the rows."},
                   "explanations": {"type": "array", "items": ref("Explanation"),
                                    "description": "One per row, in Google's shape."}},
    "description": "KServe V1's `:explain` answer.",
}

REGRESS_RESPONSE: Schema = {
    "type": "object",
    "required": ["results"],
    "properties": {"results": {"type": "array", "items": {"type": "number"}}},
}


def components() -> Schema:
    return {
        "schemas": {"TFServingVersionStatus": VERSION_STATUS, "TFServingStatus": STATUS,
                    "TFServingSignatureDef": SIGNATURE_DEF, "TFServingMetadata": METADATA,
                    "TFServingPredictRequest": PREDICT_REQUEST,
                    "TFServingPredictResponse": PREDICT_RESPONSE,
                    "TFServingExamplesRequest": EXAMPLES_REQUEST,
                    "TFServingClassifyResponse": CLASSIFY_RESPONSE,
                    "TFServingRegressResponse": REGRESS_RESPONSE,
                    "KServeV1ExplainResponse": EXPLAIN_RESPONSE},
        "parameters": {
            "tfservingVersion": path_param("version", "A version number.", "^[0-9]+$", "1"),
            "label": path_param("label", "A version label from the model's "
                                "`version_labels`.", example="stable"),
        },
    }


VERBS: tuple[tuple[str, str, str, str, str | None, Any, str, tuple[int, ...]], ...] = (
    # suffix, method, operationId stem, summary, request schema, request example,
    # 200 schema, error codes
    ("", "get", "tfservingStatus", "Status of the model's versions", None, None,
     "TFServingStatus", (400, 404)),
    ("/metadata", "get", "tfservingMetadata", "Signatures of a version", None, None,
     "TFServingMetadata", (400, 404)),
    (":predict", "post", "tfservingPredict", "Predict", "TFServingPredictRequest",
     {"instances": [ROW]}, "TFServingPredictResponse", (400, 404, 413, 500)),
    (":classify", "post", "tfservingClassify", "Classify `tf.Example`s",
     "TFServingExamplesRequest", {"examples": [{"x": ROW}]}, "TFServingClassifyResponse",
     (400, 404, 413, 500)),
    (":regress", "post", "tfservingRegress", "Regress `tf.Example`s",
     "TFServingExamplesRequest", None, "TFServingRegressResponse", (400, 404, 413, 500)),
    (":explain", "post", "kserveV1Explain", "Explain (KServe V1's `:explain`)",
     "TFServingPredictRequest", {"instances": [ROW]}, "KServeV1ExplainResponse",
     (400, 404, 413, 500)),
)


def paths(settings: Settings) -> dict[str, Schema]:
    items: dict[str, Schema] = {}
    for form, suffix_id, extra in FORMS:
        for suffix, method, stem, summary, request, example, answer, codes in VERBS:
            parameters = [param("model"), *(param(name) for name in extra)]
            body = json_body(ref(request), example=example) if request else None
            responses = {"200": response("Success.", ref(answer)),
                         **errors("Error", *codes)}
            items[f"/v1/models/{{model}}{form}{suffix}"] = {method: operation(
                stem + suffix_id, TAG, summary, responses, parameters, body)}
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
