"""The Open Inference Protocol V2 (KServe, Triton, MLServer): health, metadata, readiness
and inference, with the binary tensor data, classification, model repository and statistics
extensions."""

from __future__ import annotations

from ...openapi.schemas import (ANY, BINARY, JSON, PARAMETERS, ROW, SHAPE, Part, Schema, content,
                                errors, operation, param, path_param, ref, response)
from ...settings.config import Settings

TAG = "V2"
DESCRIPTION = ("The Open Inference Protocol V2 (KServe, Triton, MLServer). Errors are "
               "`{\"error\": \"<message>\"}`; health and readiness answer 200 (true) or 400 "
               "(false) with an empty body.")

DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
             "FP16", "FP32", "FP64", "BF16", "BYTES"]

HEADER_LENGTH = "Inference-Header-Content-Length"

SERVER_METADATA: Schema = {
    "type": "object",
    "required": ["name", "version", "extensions"],
    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                   "extensions": {"type": "array", "items": {"type": "string"}}},
}

METADATA_TENSOR: Schema = {
    "type": "object",
    "required": ["name", "datatype", "shape"],
    "properties": {"name": {"type": "string"}, "datatype": {"type": "string"},
                   "shape": SHAPE},
}

MODEL_METADATA: Schema = {
    "type": "object",
    "required": ["name", "platform", "inputs", "outputs"],
    "properties": {
        "name": {"type": "string"},
        "versions": {"type": "array", "items": {"type": "string"}},
        "platform": {"type": "string"},
        "inputs": {"type": "array", "items": ref("V2MetadataTensor")},
        "outputs": {"type": "array", "items": ref("V2MetadataTensor")},
    },
}

REQUEST_INPUT: Schema = {
    "type": "object",
    "required": ["name", "shape", "datatype"],
    "properties": {
        "name": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "datatype": {"type": "string", "enum": DATATYPES},
        "parameters": {**PARAMETERS, "description": "`binary_data_size` for binary data."},
        "data": {**ANY, "description": "Row-major values, flat or nested; absent for binary "
                                       "data."},
    },
}

REQUEST_OUTPUT: Schema = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"},
                   "parameters": {**PARAMETERS, "description": "`binary_data`, "
                                  "`classification`."}},
}

INFER_REQUEST: Schema = {
    "type": "object",
    "required": ["inputs"],
    "properties": {
        "id": {"type": "string"},
        "parameters": {**PARAMETERS, "description": "`binary_data_output`."},
        "inputs": {"type": "array", "minItems": 1, "items": ref("V2RequestInput")},
        "outputs": {"type": "array", "items": ref("V2RequestOutput")},
    },
}

RESPONSE_OUTPUT: Schema = {
    "type": "object",
    "required": ["name", "shape", "datatype"],
    "properties": {
        "name": {"type": "string"},
        "shape": SHAPE,
        "datatype": {"type": "string", "enum": DATATYPES},
        "parameters": PARAMETERS,
        "data": {"type": "array", "description": "Flat, row-major; absent for binary data."},
    },
}

INFER_RESPONSE: Schema = {
    "type": "object",
    "required": ["model_name", "outputs"],
    "properties": {
        "model_name": {"type": "string"},
        "model_version": {"type": "string"},
        "id": {"type": "string"},
        "parameters": PARAMETERS,
        "outputs": {"type": "array", "items": ref("V2ResponseOutput")},
    },
}

PROBE = {"200": response("True."), "400": response("False.")}

INDEX_ENTRY: Schema = {
    "type": "object",
    "required": ["name", "state", "reason"],
    "properties": {
        "name": {"type": "string"},
        "version": {"type": "string", "description": "Absent when no version is known."},
        "state": {"type": "string", "enum": ["READY", "LOADING", "UNLOADING", "UNAVAILABLE"]},
        "reason": {"type": "string"},
    },
}

DURATION: Schema = {"type": "object", "required": ["count", "ns"],
                    "properties": {"count": {"type": "integer"}, "ns": {"type": "integer"}}}

MODEL_STATS: Schema = {
    "type": "object",
    "required": ["name", "version", "last_inference", "inference_count", "execution_count",
                 "inference_stats"],
    "properties": {
        "name": {"type": "string"}, "version": {"type": "string"},
        "last_inference": {"type": "integer", "description": "ms since the epoch; 0: none."},
        "inference_count": {"type": "integer"}, "execution_count": {"type": "integer"},
        "inference_stats": {"type": "object", "properties": {
            name: ref("V2StatDuration") for name in (
                "success", "fail", "queue", "compute_input", "compute_infer",
                "compute_output")}},
        "batch_stats": {"type": "array", "items": ANY},
        "memory_usage": {"type": "array", "items": ANY},
    },
}


def components() -> Schema:
    return {
        "schemas": {"V2ServerMetadata": SERVER_METADATA, "V2MetadataTensor": METADATA_TENSOR,
                    "V2ModelMetadata": MODEL_METADATA, "V2RequestInput": REQUEST_INPUT,
                    "V2RequestOutput": REQUEST_OUTPUT, "V2InferRequest": INFER_REQUEST,
                    "V2ResponseOutput": RESPONSE_OUTPUT, "V2InferResponse": INFER_RESPONSE,
                    "V2IndexEntry": INDEX_ENTRY, "V2StatDuration": DURATION,
                    "V2ModelStats": MODEL_STATS},
        "parameters": {"v2Version": path_param("version", "A version number.", example="1")},
    }


def paths(settings: Settings) -> dict[str, Schema]:
    server = operation("v2ServerMetadata", TAG, "Server metadata",
                       {"200": response("Name, version, extensions.", ref("V2ServerMetadata"))})
    items: dict[str, Schema] = {
        "/v2": {"get": server},
        "/v2/": {"get": {**server, "operationId": "v2ServerMetadataSlash"}},
        "/v2/health/live": {"get": operation("v2Live", TAG, "Server live", PROBE)},
        "/v2/health/ready": {"get": operation(
            "v2Ready", TAG, "Server ready: every configured model loaded", PROBE)},
    }
    infer_body = {"required": True, "content": {
        JSON: {"schema": ref("V2InferRequest"), "example": {"inputs": [
            {"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}},
        BINARY: {"schema": {"type": "string", "format": "binary",
                            "description": f"The JSON request, as long as the header "
                                           f"{HEADER_LENGTH} says, then the binary tensor "
                                           "data."}}}}
    binary_answer = {"schema": {"type": "string", "format": "binary"}}
    inferred = {"200": {"description": "The outputs; `application/octet-stream` (the JSON "
                                       "response, then binary outputs) when an output is "
                                       "asked for as binary data.",
                        "headers": {HEADER_LENGTH: {"schema": {"type": "integer"},
                                                    "description": "With binary outputs."}},
                        "content": {**content(ref("V2InferResponse")),
                                    BINARY: binary_answer}},
                **errors("Error", 400, 404, 413, 500, 503)}
    for form, suffix, extra in (("", "", []), ("/versions/{version}", "Version",
                                               [param("v2Version")])):
        base = f"/v2/models/{{model}}{form}"
        parameters = [param("model"), *extra]
        items[base] = {"get": operation(
            f"v2ModelMetadata{suffix}", TAG, "Model metadata",
            {"200": response("Inputs and outputs.", ref("V2ModelMetadata")),
             **errors("Error", 400, 404, 503)}, parameters)}
        items[f"{base}/ready"] = {"get": operation(
            f"v2ModelReady{suffix}", TAG, "Model ready",
            {**PROBE, **errors("Error", 404)}, parameters)}
        items[f"{base}/infer"] = {"post": operation(
            f"v2Infer{suffix}", TAG, "Inference", inferred,
            parameters, infer_body)}
    items.update(extension_paths())
    return items


def extension_paths() -> dict[str, Schema]:
    """Triton's model repository and statistics extensions."""
    items: dict[str, Schema] = {}
    stats = {"200": response("Counts and cumulative times, summed over the workers.",
                             {"type": "object", "required": ["model_stats"], "properties": {
                                 "model_stats": {"type": "array",
                                                 "items": ref("V2ModelStats")}}}),
             **errors("Error", 404), "501": response("PREDICT_METRICS is off.", ref("Error"))}
    for path, suffix, parameters in (
            ("/v2/models/stats", "", []),
            ("/v2/models/{model}/stats", "Model", [param("model")]),
            ("/v2/models/{model}/versions/{version}/stats", "Version",
             [param("model"), param("v2Version")])):
        items[path] = {"get": operation(f"v2Statistics{suffix}", TAG, "Statistics", stats,
                                        parameters)}
    items["/v2/repository/index"] = {"post": operation(
        "v2RepositoryIndex", TAG, "The configured models and their states",
        {"200": response("One entry per version.", {"type": "array",
                                                    "items": ref("V2IndexEntry")}),
         **errors("Error", 400)}, body={"required": False, "content": {JSON: {
             "schema": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
             "example": {"ready": True}}}})}
    changed = {"200": response("Done in the worker that answered; the others follow "
                               "within PREDICT_POLL_SECONDS."),
               **errors("Error", 400, 404, 503),
               "401": response("Admin tokens are configured and none came.", ref("Error")),
               "403": response("Not a loopback client, no admin token configured.",
                               ref("Error"))}
    for action in ("load", "unload"):
        items[f"/v2/repository/models/{{model}}/{action}"] = {"post": operation(
            f"v2Repository{action.title()}", TAG, f"{action.title()} a configured model "
            "(an admin route)", changed, [param("model")],
            {"required": False, "content": {JSON: {"schema": {
                "type": "object", "properties": {"parameters": PARAMETERS}}}}})}
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
