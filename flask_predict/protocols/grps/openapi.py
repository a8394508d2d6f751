"""The grps HTTP interface under ``/grps/v1``: health, predict, metadata and monitor."""

from __future__ import annotations

from ...openapi.schemas import (ANY, BINARY, JSON, ROW, Part, Schema, errors, json_body, operation,
                                query_param, ref, response)
from ...settings.config import Settings

TAG = "grps"
DESCRIPTION = ("The grps HTTP interface. Every answer is a `GrpsMessage` with a `status` "
               "envelope; errors are `{\"status\": {\"code\": <http status>, \"msg\": "
               "\"<reason>\", \"status\": \"FAILURE\"}}`.")

ROOT = "/grps/v1"

STATUS: Schema = {
    "type": "object",
    "required": ["code", "msg", "status"],
    "properties": {"code": {"type": "integer"}, "msg": {"type": "string"},
                   "status": {"type": "string", "enum": ["SUCCESS", "FAILURE"]}},
}

ERROR: Schema = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"allOf": [ref("GrpsStatus"), {
        "properties": {"status": {"const": "FAILURE"}}}]}},
}

TENSOR: Schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "dtype": {"description": "A `DT_*` name (or its enum number in requests).",
                  "anyOf": [{"type": "string"}, {"type": "integer"}]},
        "shape": {"type": "array", "items": {"type": "integer"}},
    },
    "patternProperties": {"^flat_": {"type": "array"}},
    "description": "A `GenericTensor`: its values in the `flat_<type>` field of its dtype.",
}

GMAP: Schema = {
    "type": "object",
    "properties": {field: {"type": "object"} for field in
                   ("s_s", "s_b", "s_i32", "s_i64", "s_f", "s_d")},
}

MESSAGE: Schema = {
    "type": "object",
    "properties": {
        "status": ref("GrpsStatus"),
        "model": {"type": "string", "description": "`name`, `name-<version>` or "
                                                   "`name-<label>` (requests only)."},
        "str_data": {"type": "string"},
        "bin_data": {"type": "string", "contentEncoding": "base64"},
        "gtensors": {"type": "object", "properties": {
            "tensors": {"type": "array", "items": ref("GrpsTensor")}}},
        "gmap": ref("GrpsMap"),
        "ndarray": {**ANY, "description": "A nested list of float32 values."},
    },
    "description": "A `grps.protos.v1.GrpsMessage` in protobuf's JSON form: one payload.",
}

OK_MESSAGE: Schema = {"allOf": [ref("GrpsMessage"), {"required": ["status"]}]}

METRICS: Schema = {
    "type": "object",
    "required": ["*qps", "*request_count", "*fail_count", "workers"],
    "properties": {"*qps": {"type": "number"}, "*request_count": {"type": "integer"},
                   "*fail_count": {"type": "integer"}, "*fail_rate(%)": {"type": "number"},
                   "*latency_avg(ms)": {"type": "number"},
                   "*latency_max(ms)": {"type": "number"},
                   "*latency_cdf(ms)": {"type": "object"}, "workers": {"type": "integer"}},
}

SERIES: Schema = {
    "type": "object",
    "required": ["label", "data"],
    "properties": {
        "label": {"type": "string", "enum": ["trend", "cdf"]},
        "data": {"type": "array", "items": {"type": "array", "items": {"type": "number"},
                                            "minItems": 2, "maxItems": 2}},
        "buckets_ms": {"type": "array", "items": {"type": "number"}},
    },
}


def components() -> Schema:
    return {"schemas": {"GrpsStatus": STATUS, "GrpsError": ERROR, "GrpsTensor": TENSOR,
                        "GrpsMap": GMAP, "GrpsMessage": MESSAGE, "GrpsOkMessage": OK_MESSAGE,
                        "GrpsMetrics": METRICS, "GrpsSeries": SERIES}}


def _ok(description: str) -> Schema:
    return response(description, ref("GrpsOkMessage"))


def paths(settings: Settings) -> dict[str, Schema]:
    items: dict[str, Schema] = {}
    health = {"live": "Always OK", "online": "Mark the whole server online",
              "offline": "Mark the whole server offline",
              "ready": "OK when online and every model is loaded"}
    for name, summary in health.items():
        answers = {"200": _ok("OK.")}
        if name == "ready":
            answers.update(errors("GrpsError", 503))
        if name in ("online", "offline"):  # state-changing: admin token or loopback
            answers.update(errors("GrpsError", 401, 403))
        items[f"{ROOT}/health/{name}"] = {
            method: operation(f"grps{name.title()}{method.title()}", TAG, summary, answers)
            for method in ("get", "post")}

    flag = {"type": "string", "description": "`true` turns it on; any other value is off."}
    predict_body = {"required": True, "content": {
        JSON: {"schema": ref("GrpsMessage"), "example": {"model": "iris", "ndarray": [ROW]}},
        BINARY: {"schema": {"type": "string", "format": "binary",
                            "description": "`bin_data`: the raw bytes."}}}}
    items[f"{ROOT}/infer/predict"] = {"post": operation(
        "grpsPredict", TAG, "Predict", {
            "200": {"description": "A `GrpsMessage`; `application/octet-stream` for "
                                   "`bin_data` answers and streams (one message per chunk).",
                    "content": {JSON: {"schema": ref("GrpsOkMessage")},
                                BINARY: {"schema": {"type": "string", "format": "binary"}}}},
            **errors("GrpsError", 400, 404, 413, 500, 503)},
        [query_param("model", "The model when the body names none.", {"type": "string"}),
         query_param("streaming", "Stream one message per prediction.", flag, "false"),
         query_param("return-ndarray", "Answer the first output as `ndarray`.", flag,
                     "false")],
        predict_body)}

    server = {method: operation(f"grpsServerMetadata{method.title()}", TAG,
                                "Server metadata: YAML text in `str_data`",
                                {"200": _ok("The server and its models.")})
              for method in ("get", "post")}
    items[f"{ROOT}/metadata/server"] = server
    items[f"{ROOT}/metadata/model"] = {"post": operation(
        "grpsModelMetadata", TAG, "Model metadata: YAML text in `str_data`",
        {"200": _ok("The model."), **errors("GrpsError", 400, 404, 413, 503)},
        body=json_body({"type": "object", "required": ["str_data"],
                        "properties": {"str_data": {"type": "string",
                                                    "description": "A model id."}}},
                  example={"str_data": "iris"}))}

    items[f"{ROOT}/monitor/metrics"] = {"get": operation(
        "grpsMetrics", TAG, "Request metrics of every worker",
        {"200": {"description": "HTML, or JSON with `?format=json` or "
                                "`Accept: application/json`.",
                 "content": {"text/html": {"schema": {"type": "string"}},
                             JSON: {"schema": ref("GrpsMetrics")}}}},
        [query_param("format", "`json` for JSON; any other value: HTML.",
                     {"type": "string", "examples": ["json"]})])}
    items[f"{ROOT}/monitor/series"] = {"get": operation(
        "grpsSeries", TAG, "One metric over the last minute",
        {"200": response("The series.", ref("GrpsSeries")), **errors("GrpsError", 404)},
        [query_param("name", "`*qps`, `*fail_rate(%)`, `*latency_avg(ms)`, "
                     "`*latency_max(ms)` or `*latency_cdf(ms)`.", {"type": "string"})])}
    return items


PART = Part(TAG, DESCRIPTION, components, paths)
