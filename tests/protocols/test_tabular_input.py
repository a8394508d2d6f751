"""Bad input for models fitted on tables, over every protocol, REST and gRPC: a column of the
wrong type, an unknown or a missing column, ragged columns, an unknown category, a huge
string, a missing value where the model takes none. Each is the client's error in the
protocol's own form (400, ``INVALID_ARGUMENT``, grps's ``FAILURE`` 400) naming what is
wrong, never a server error; and the same request made right is answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import grpc
import pytest
from flask import Flask
from flask.testing import FlaskClient
from google.protobuf import json_format

from flask_predict.grpc.messages import grps, tf as tf_messages, tfs, v2
from tests.grpc_app import serving
from tests.tabular_models import train_people, train_reviews, train_shops

DROP = object()
"""A column left out of the request."""

BASE: dict[str, dict[str, list[Any]]] = {
    "people": {"age": [31, 58], "income": [40000.5, 61000.0], "city": ["Paris", "Rome"],
               "segment": ["retail", "business"]},
    "shops": {"color": ["red", "green"], "size": [0.25, 1.5]},
}
"""Good columns of each model: each case below changes one."""

HUGE = "x" * 100_000

CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    # case -> (model, the columns it changes, what the error names)
    "text-for-number": ("people", {"age": ["thirty", "58"]}, "age"),
    "number-for-text": ("people", {"city": [7, 8]}, "city"),
    "unknown-column": ("people", {"zip": [75001, 75002]}, "zip"),
    "missing-column": ("people", {"income": DROP}, "income"),
    "ragged": ("people", {"income": [40000.5]}, "income"),
    "unknown-category": ("people", {"city": ["Berlin", "Rome"]}, "Berlin"),
    "huge-string": ("people", {"city": [HUGE, "Rome"]}, "city"),
    "null-category": ("people", {"city": [None, "Rome"]}, "city"),
    "xgb-unknown-category": ("shops", {"color": ["purple", "red"]}, "purple"),
    "xgb-text-for-number": ("shops", {"size": ["big", "small"]}, "size"),
    "xgb-number-for-text": ("shops", {"color": [1, 2]}, "color"),
    "xgb-unknown-column": ("shops", {"weight": [1.0, 2.0]}, "weight"),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flask, int]]:
    root = tmp_path_factory.mktemp("tabular")
    models = {}
    for name, train in (("people", train_people), ("shops", train_shops),
                        ("reviews", train_reviews)):
        train(root / name)
        models[name] = {"base_path": str(root / name)}
    yield from serving(models)


@pytest.fixture()
def client(served: tuple[Flask, int]) -> FlaskClient:
    return served[0].test_client()


# --- each protocol's form of a table's columns ----------------------------------------------

def rows_of(columns: dict[str, list[Any]]) -> list[Any]:
    """Objects keyed by column; plain rows by position where the columns are ragged."""
    lengths = {len(values) for values in columns.values()}
    if len(lengths) == 1:
        (count,) = lengths
        return [{name: values[i] for name, values in columns.items()} for i in range(count)]
    longest = max(lengths)
    return [[values[i] for values in columns.values() if i < len(values)]
            for i in range(longest)]


def is_text(values: list[Any]) -> bool:
    return any(isinstance(value, str) for value in values)


def v2_json(columns: dict[str, list[Any]]) -> Any:
    return {"inputs": [{"name": name, "shape": [len(values), 1],
                        "datatype": "BYTES" if is_text(values) else "FP64", "data": values}
                       for name, values in columns.items()]}


def grps_json(model: str, columns: dict[str, list[Any]]) -> Any:
    tensors = []
    for name, values in columns.items():
        if is_text(values):
            tensors.append({"name": name, "dtype": "DT_STRING", "shape": [len(values)],
                            "flat_string": values})
        else:
            tensors.append({"name": name, "dtype": "DT_FLOAT64", "shape": [len(values)],
                            "flat_float64": values})
    return {"model": model, "gtensors": {"tensors": tensors}}


def grps_gmap(model: str, columns: dict[str, list[Any]]) -> Any:
    row = {name: values[0] for name, values in columns.items()}
    return {"model": model, "gmap": {
        "s_s": {k: v for k, v in row.items() if isinstance(v, str)},
        "s_d": {k: v for k, v in row.items() if not isinstance(v, str)}}}


def failure(status: int, body: bytes) -> tuple[int, str]:
    """The status and the error's words of a REST answer, in any protocol's form."""
    answer = json.loads(body) if body else {}
    error = answer.get("error")
    if isinstance(error, dict):  # Google's error envelope (Vertex AI)
        return status, error["message"]
    if isinstance(error, str):
        return status, error
    grps_status = answer.get("status", {})
    return grps_status.get("code", status), grps_status.get("msg", "")


def rpc(port: int, method: str, message: Any, answer: Any) -> tuple[int, str]:
    """An rpc's outcome as (HTTP-like status, message): 200 for OK, 400 for
    ``INVALID_ARGUMENT``, 500 for anything else; grps's own envelope where it answers one."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as chan:
        call = chan.unary_unary(method, request_serializer=type(message).SerializeToString,
                                response_deserializer=answer.FromString)
        try:
            reply = call(message)
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            status = 400 if code == grpc.StatusCode.INVALID_ARGUMENT else 500
            return status, str(exc.details())  # type: ignore[attr-defined]
    if hasattr(reply, "status") and reply.HasField("status"):  # grps
        return reply.status.code or 200, reply.status.msg
    return 200, ""


def tf_tensor(values: list[Any]) -> Any:
    proto = tf_messages.TensorProto(dtype=7 if is_text(values) else 2)
    proto.tensor_shape.dim.add(size=len(values))
    if is_text(values):
        proto.string_val.extend(str(value).encode() for value in values)
    else:
        proto.double_val.extend(values)
    return proto


def tfs_grpc(port: int, model: str, columns: dict[str, list[Any]]) -> tuple[int, str]:
    ask = tfs.PredictRequest()
    ask.model_spec.name = model
    for name, values in columns.items():
        ask.inputs[name].CopyFrom(tf_tensor(values))
    return rpc(port, "/tensorflow.serving.PredictionService/Predict", ask, tfs.PredictResponse)


def v2_grpc(port: int, model: str, columns: dict[str, list[Any]]) -> tuple[int, str]:
    ask = v2.ModelInferRequest(model_name=model)
    for name, values in columns.items():
        tensor = ask.inputs.add(name=name, shape=[len(values), 1])
        if is_text(values):
            tensor.datatype = "BYTES"
            tensor.contents.bytes_contents.extend(str(value).encode() for value in values)
        else:
            tensor.datatype = "FP64"
            tensor.contents.fp64_contents.extend(values)
    return rpc(port, "/inference.GRPCInferenceService/ModelInfer", ask, v2.ModelInferResponse)


def grps_grpc(port: int, body: Any) -> tuple[int, str]:
    message = json_format.ParseDict(body, grps.GrpsMessage())
    return rpc(port, "/grps.protos.v1.GrpsService/Predict", message, grps.GrpsMessage)


Ask = Callable[[FlaskClient, int, str, dict[str, list[Any]]], tuple[int, str]]


def _post(client: FlaskClient, path: str, body: Any) -> tuple[int, str]:
    answer = client.post(path, json=body)
    return failure(answer.status_code, answer.data)


PROTOCOLS: dict[str, Ask] = {
    "aiplatform": lambda c, p, m, cols: _post(c, f"/v1/projects/p/models/{m}:predict",
                                              {"instances": rows_of(cols)}),
    "vertex": lambda c, p, m, cols: _post(c, f"/v1/projects/p/locations/l/endpoints/{m}:predict",
                                          {"instances": rows_of(cols)}),
    "tfserving-instances": lambda c, p, m, cols: _post(c, f"/v1/models/{m}:predict",
                                                       {"instances": rows_of(cols)}),
    "tfserving-inputs": lambda c, p, m, cols: _post(c, f"/v1/models/{m}:predict",
                                                    {"inputs": cols}),
    "tfserving-grpc": lambda c, p, m, cols: tfs_grpc(p, m, cols),
    "v2": lambda c, p, m, cols: _post(c, f"/v2/models/{m}/infer", v2_json(cols)),
    "v2-grpc": lambda c, p, m, cols: v2_grpc(p, m, cols),
    "grps-gtensors": lambda c, p, m, cols: _post(c, "/grps/v1/infer/predict", grps_json(m, cols)),
    "grps-gmap": lambda c, p, m, cols: _post(c, "/grps/v1/infer/predict", grps_gmap(m, cols)),
    "grps-grpc": lambda c, p, m, cols: grps_grpc(p, grps_json(m, cols)),
}

NO_NULL = {"tfserving-grpc", "v2-grpc", "grps-gtensors", "grps-grpc"}
"""Forms whose text has no null (protobuf strings; grps's ``flat_string``)."""

ONE_ROW = {"grps-gmap"}
"""Forms of one row: columns cannot be ragged there."""


def changed(model: str, change: dict[str, Any]) -> dict[str, list[Any]]:
    columns = {**BASE[model], **change}
    return {name: values for name, values in columns.items() if values is not DROP}


def carried(protocol: str, case: str) -> bool:
    """Whether *protocol*'s form can say what *case* sends: a null, or ragged columns."""
    model, change, _ = CASES[case]
    if protocol in NO_NULL and any(None in values for values in changed(model, change).values()):
        return False
    return not (protocol in ONE_ROW and case == "ragged")


@pytest.mark.parametrize(("protocol", "case"), [
    (protocol, case) for protocol in sorted(PROTOCOLS) for case in sorted(CASES)
    if carried(protocol, case)])
def test_bad_columns_are_the_clients_error_naming_them(
        client: FlaskClient, served: tuple[Flask, int], protocol: str, case: str) -> None:
    model, change, named = CASES[case]
    columns = changed(model, change)
    status, message = PROTOCOLS[protocol](client, served[1], model, columns)
    assert status == 400, message
    assert named in message and len(message) < 2000, message[:2000]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@pytest.mark.parametrize("model", sorted(BASE))
def test_the_same_columns_made_right_are_answered(
        client: FlaskClient, served: tuple[Flask, int], protocol: str, model: str) -> None:
    status, message = PROTOCOLS[protocol](client, served[1], model, BASE[model])
    assert status == 200, message


NULL_TEXT = "JSON Value: null Type: Null is not of expected type: string"
"""TF Serving's words for null among one input's strings (a text model's plain instances)."""


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/projects/p/models/reviews:predict", {"instances": ["good", None]}, NULL_TEXT),
    ("/v1/models/reviews:predict", {"instances": ["good", None]}, NULL_TEXT),
    ("/v1/models/reviews:predict", {"inputs": ["good", None]}, NULL_TEXT),
    ("/v2/models/reviews/infer", {"inputs": [{"name": "text", "datatype": "BYTES",
                                              "shape": [2], "data": ["good", None]}]},
     "column 'inputs': value 1 is missing (null); the model reads text there"),
])
def test_a_missing_text_for_a_vectorizer_is_refused(client: FlaskClient, path: str,
                                                     body: Any, message: str) -> None:
    """A text vectorizer cannot read a missing text: 400, not the vectorizer's own failure
    (500)."""
    answer = client.post(path, json=body)
    status, got = failure(answer.status_code, answer.data)
    assert status == 400 and message in got, got


def test_tf_serving_columnar_errors_name_the_column_of_a_table(client: FlaskClient) -> None:
    answer = client.post("/v1/models/people:predict",
                         json={"inputs": {**BASE["people"], "age": ["thirty", 58]}})
    assert answer.status_code == 400
    assert answer.get_json()["error"] == ("column 'age': JSON Value: \"thirty\" Type: String "
                                          "is not of expected type: double")


def test_a_grps_gmap_row_without_typed_maps_names_them(client: FlaskClient) -> None:
    """grps ignores a gmap's unknown fields, as protobuf's parser does: a row written as a
    plain object leaves no value, and the answer says where the values go."""
    status, message = _post(client, "/grps/v1/infer/predict", {
        "model": "people", "gmap": {"age": 31, "income": 40000.5, "city": "Paris"}})
    assert status == 400
    assert "no values in s_s, s_b, s_i32, s_i64, s_f, s_d" in message, message
