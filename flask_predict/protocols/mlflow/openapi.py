"""The MLflow scoring routes: ``/ping``, ``/health``, ``/version``, ``/invocations`` and
SageMaker's ``/execution-parameters`` and multi-model API (``/models``)."""

from __future__ import annotations

from ...openapi.schemas import (ANY, JSON, ROW, Part, Schema, content, errors, operation,
                                path_param, ref, response)
from ...settings.config import Settings
from .wire import CSV

TAG = "MLflow"
DESCRIPTION = ("MLflow's scoring protocol (`mlflow models serve`), which is also SageMaker's "
               "container contract. Errors are `{\"error_code\": \"<MLflow's code>\", "
               "\"message\": \"<reason>\"}`.")

ERROR: Schema = {
    "type": "object",
    "required": ["error_code", "message"],
    "properties": {"error_code": {"type": "string", "examples": ["BAD_REQUEST"]},
                   "message": {"type": "string"}},
}

FRAME_SPLIT: Schema = {
    "type": "object", "required": ["data"],
    "properties": {"columns": {"type": "array", "items": {"type": "string"}},
                   "data": {"type": "array", "items": {"type": "array"}},
                   "index": {"type": "array"}},
    "description": "pandas' `split` orient.",
}

REQUEST: Schema = {
    "type": "object",
    "description": "Exactly one of `dataframe_split`, `dataframe_records`, `instances` "
                   "(TF Serving's rows) or `inputs` (TF Serving's columns); `params` are "
                   "handed to the model.",
    "properties": {
        "dataframe_split": ref("MlflowFrameSplit"),
        "dataframe_records": {"type": "array", "items": {"type": "object"}},
        "instances": {"type": "array"},
        "inputs": ANY,
        "params": {"type": "object"},
    },
    "minProperties": 1,
}

ANSWER: Schema = {"type": "object", "required": ["predictions"],
                  "properties": {"predictions": ANY}}

EXECUTION: Schema = {
    "type": "object",
    "required": ["MaxConcurrentTransforms", "BatchStrategy", "MaxPayloadInMB"],
    "properties": {"MaxConcurrentTransforms": {"type": "integer", "minimum": 1},
                   "BatchStrategy": {"type": "string",
                                     "enum": ["MULTI_RECORD", "SINGLE_RECORD"]},
                   "MaxPayloadInMB": {"type": "integer", "minimum": 1, "maximum": 100}},
}


def components() -> Schema:
    return {"schemas": {"MlflowError": ERROR, "MlflowFrameSplit": FRAME_SPLIT,
                        "MlflowRequest": REQUEST, "MlflowAnswer": ANSWER,
                        "MlflowExecutionParameters": EXECUTION}}


def paths(settings: Settings) -> dict[str, Schema]:
    probe = {"200": response("Every model is loaded; the body is a newline.",
                             {"type": "string"}, "text/plain"),
             **errors("MlflowError", 503)}
    items: dict[str, Schema] = {
        "/ping": {"get": operation("mlflowPing", TAG, "Ready (SageMaker's health check)",
                                   probe)},
        "/health": {"get": operation("mlflowHealth", TAG, "Ready (as /ping)", probe)},
        "/version": {"get": operation("mlflowVersion", TAG, "The server's version",
                                      {"200": response("The version, as text.",
                                                       {"type": "string"}, "text/plain")})},
        "/execution-parameters": {"get": operation(
            "mlflowExecutionParameters", TAG, "SageMaker batch transform's parameters",
            {"200": response("What a batch transform job may send.",
                             ref("MlflowExecutionParameters"))})},
    }
    body = {"required": True, "content": {
        JSON: {"schema": ref("MlflowRequest"),
               "example": {"dataframe_split": {"data": [ROW]}}},
        CSV: {"schema": {"type": "string", "description": "A header row, then one row per "
                                                          "line."}}}}
    target = {"name": "X-Amzn-SageMaker-Target-Model", "in": "header", "required": False,
              "description": "The model, when several are served (else "
                             "`PREDICT_MLFLOW_MODEL`, else the only one).",
              "schema": {"type": "string"}, "example": "iris"}
    items["/invocations"] = {"post": operation(
        "mlflowInvocations", TAG, "Predict",
        {"200": {"description": "The predictions; CSV lines with `Accept: text/csv`.",
                 "content": {**content(ref("MlflowAnswer")),
                             CSV: {"schema": {"type": "string"}}}},
         **errors("MlflowError", 400, 404, 413, 500, 503),
         "415": response("A content type other than JSON or CSV, or a parameter other than "
                         "`charset=utf-8` (MLflow's pre-2.0 `format=pandas-split`).",
                         ref("MlflowError"))},
        [target], body)}
    items.update(multi_model_paths(body))
    return items


MODEL: Schema = {"type": "object", "required": ["modelName", "modelUrl"],
                 "properties": {"modelName": {"type": "string"},
                                "modelUrl": {"type": "string"}}}


def multi_model_paths(body: Schema) -> dict[str, Schema]:
    """SageMaker's multi-model API (``SAGEMAKER_MULTI_MODEL=true``; else every route 404)."""
    name = path_param("model", "An added model's name: a plain folder name, not hidden.",
                      pattern=r"^[^./\\][^/\\]*$")
    body = {**body, "content": {kind: {k: v for k, v in media.items() if k != "example"}
                                for kind, media in body["content"].items()}}
    token = {"name": "next_page_token", "in": "query", "required": False,
             "schema": {"type": "string"}}
    load = {"required": True, "content": content({
        "type": "object", "required": ["model_name", "url"],
        "properties": {"model_name": {"type": "string"},
                       "url": {"type": "string", "description": "A folder inside "
                               "`PREDICT_LAZY_ROOT`."}}})}
    model = {"200": response("The model.", MODEL), **errors("MlflowError", 404)}
    listed = {"type": "object", "required": ["models"],
              "properties": {"models": {"type": "array", "items": MODEL},
                             "nextPageToken": {"type": "string"}}}
    return {
        "/models": {
            "post": operation("sagemakerLoadModel", TAG, "Load a model (SageMaker multi-model)",
                              {"200": response("Loaded in the worker that answered.", MODEL),
                               **errors("MlflowError", 400, 401, 403, 404),
                               "409": response("The model is loaded already.",
                                               ref("MlflowError")),
                               "507": response("The memory cap cannot hold the model.",
                                               ref("MlflowError"))}, body=load),
            "get": operation("sagemakerListModels", TAG, "The loaded models",
                             {"200": response("One page of them.", listed),
                              **errors("MlflowError", 400, 404)}, [token])},
        "/models/{model}": {
            "get": operation("sagemakerGetModel", TAG, "A loaded model", model, [name]),
            "delete": operation("sagemakerUnloadModel", TAG, "Unload a model",
                                {"200": response("Unloaded in every worker.", {"type": "object"}),
                                 **errors("MlflowError", 401, 403, 404)}, [name])},
        "/models/{model}/invoke": {"post": operation(
            "sagemakerInvokeModel", TAG, "Predict with a loaded model",
            {"200": response("The predictions.", ref("MlflowAnswer")),
             **errors("MlflowError", 400, 404, 413, 500, 503)}, [name], body)},
    }


PART = Part(TAG, DESCRIPTION, components, paths)
