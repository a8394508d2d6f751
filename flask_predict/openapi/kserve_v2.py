"""The Open Inference Protocol V2 (KServe, Triton, MLServer): health, metadata, readiness
and inference, with the binary tensor data and classification extensions."""

from __future__ import annotations

from ..config import Settings
from .schemas import (ANY, BINARY, JSON, PARAMETERS, ROW, SHAPE, Part, Schema, content, errors,
                      operation, param, path_param, ref, response)

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


def components() -> Schema:
    return {
        "schemas": {"V2ServerMetadata": SERVER_METADATA, "V2MetadataTensor": METADATA_TENSOR,
                    "V2ModelMetadata": MODEL_METADATA, "V2RequestInput": REQUEST_INPUT,
                    "V2RequestOutput": REQUEST_OUTPUT, "V2InferRequest": INFER_REQUEST,
                    "V2ResponseOutput": RESPONSE_OUTPUT, "V2InferResponse": INFER_RESPONSE},
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
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
