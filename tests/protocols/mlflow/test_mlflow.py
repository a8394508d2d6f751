"""The MLflow scoring protocol through the Flask test client: every body format, MLflow's
refusals and their shape, the model a request is for, SageMaker's headers and routes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests import models as test_models
from tests.conftest import AppFactory
from tests.tabular_models import PEOPLE_ROWS

from .conftest import single_app
from .models import IRIS_COLUMNS, IRIS_ROWS

pytestmark = pytest.mark.usefixtures("mlflow_models")

IRIS_LABELS = [0, 2, 1]


def invoke(client: FlaskClient, body: Any = None, data: str | bytes | None = None,
           content_type: str | None = "application/json",
           headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POST /invocations; (status, parsed JSON answer)."""
    if body is not None:
        data = json.dumps(body)
    answer = client.post("/invocations", data=data, headers={
        **({"Content-Type": content_type} if content_type is not None else {}),
        **(headers or {})})
    assert answer.mimetype == "application/json", answer.data
    return answer.status_code, answer.get_json()


def refused(client: FlaskClient, status: int, *args: Any, **kwargs: Any) -> str:
    """The message of a refusal with *status*, checked to be in MLflow's shape."""
    got, answer = invoke(client, *args, **kwargs)
    assert got == status, answer
    assert set(answer) == {"error_code", "message"}, answer
    assert answer["error_code"] == {400: "BAD_REQUEST", 404: "RESOURCE_DOES_NOT_EXIST",
                                    415: "BAD_REQUEST", 401: "UNAUTHENTICATED",
                                    500: "INTERNAL_ERROR"}[status]
    assert "Traceback" not in answer["message"] and "/tmp" not in answer["message"]
    message: str = answer["message"]
    return message


IRIS_BODIES = {
    "dataframe_split": {"dataframe_split": {"columns": IRIS_COLUMNS, "data": IRIS_ROWS}},
    "split with index": {"dataframe_split": {"index": [7, 8, 9], "columns": IRIS_COLUMNS,
                                             "data": IRIS_ROWS}},
    "columns reordered, one extra": {"dataframe_split": {
        "columns": ["extra", *reversed(IRIS_COLUMNS)],
        "data": [[1, *reversed(row)] for row in IRIS_ROWS]}},
    "dataframe_records": {"dataframe_records": [dict(zip(IRIS_COLUMNS, row))
                                                for row in IRIS_ROWS]},
    "instances": {"instances": [dict(zip(IRIS_COLUMNS, row)) for row in IRIS_ROWS]},
    "inputs": {"inputs": {name: [row[i] for row in IRIS_ROWS]
                          for i, name in enumerate(IRIS_COLUMNS)}},
    "params": {"dataframe_split": {"columns": IRIS_COLUMNS, "data": IRIS_ROWS},
               "params": {"ignored": 1}},
    "params a model takes none of, not an object": {  # MLflow ignores them too
        "dataframe_records": [dict(zip(IRIS_COLUMNS, row)) for row in IRIS_ROWS],
        "params": [1]},
}


@pytest.mark.parametrize("name", IRIS_BODIES)
def test_every_json_format_answers_the_labels(mlflow_client: FlaskClient, name: str) -> None:
    assert invoke(mlflow_client, IRIS_BODIES[name]) == (200, {"predictions": IRIS_LABELS})


def test_csv_is_a_frame_with_a_header(mlflow_client: FlaskClient) -> None:
    text = ",".join(f'"{c}"' for c in IRIS_COLUMNS) + "\n" + "\n".join(
        ",".join(map(str, row)) for row in IRIS_ROWS) + "\n"
    assert invoke(mlflow_client, data=text, content_type="text/csv") == (
        200, {"predictions": IRIS_LABELS})
    assert invoke(mlflow_client, data=text, content_type="text/csv; charset=UTF-8")[0] == 200


def test_a_matrix_model_takes_rows_by_position(mlflow_client: FlaskClient) -> None:
    headers = {"X-Amzn-SageMaker-Target-Model": "matrix"}
    for body in ({"dataframe_split": {"data": IRIS_ROWS}}, {"instances": IRIS_ROWS},
                 {"inputs": IRIS_ROWS},
                 {"dataframe_split": {"columns": ["a", "b", "c", "d"], "data": IRIS_ROWS}}):
        assert invoke(mlflow_client, body, headers=headers) == (
            200, {"predictions": IRIS_LABELS}), body
    long = {"dataframe_split": {"columns": ["a", "b", "c", "d"], "data": IRIS_ROWS * 40}}
    assert len(json.dumps(long)) > 768  # read by simdjson, then by position
    assert invoke(mlflow_client, long, headers=headers) == (
        200, {"predictions": IRIS_LABELS * 40})


def test_a_pipeline_takes_text_and_missing_values(mlflow_client: FlaskClient) -> None:
    status, answer = invoke(mlflow_client, {"dataframe_records": PEOPLE_ROWS},
                            headers={"X-Amzn-SageMaker-Target-Model": "people"})
    assert status == 200, answer
    assert len(answer["predictions"]) == 3
    assert set(answer["predictions"]) <= {"stays", "leaves"}


# --- MLflow's refusals, in its shape ---------------------------------------------------------

def test_content_types_mlflow_refuses_are_415(mlflow_client: FlaskClient) -> None:
    body = IRIS_BODIES["dataframe_split"]
    assert refused(mlflow_client, 415, body, content_type="application/json; "
                   "format=pandas-split").startswith(
        "Unrecognized content type parameters: format. IMPORTANT: The MLflow Model scoring "
        "protocol has changed in MLflow version 2.0.")
    assert refused(mlflow_client, 415, body, content_type="application/json; charset=latin-1"
                   ) == "The scoring server only supports UTF-8"
    assert refused(mlflow_client, 415, body, content_type="text/plain").startswith(
        "This predictor only supports the following content types: Types: ['text/csv', "
        "'application/json', 'application/vnd.apache.parquet']. Got 'text/plain'.")
    # MLflow answers these 500: no content type at all
    assert refused(mlflow_client, 415, body, content_type=None).endswith("Got 'None'.")
    assert refused(mlflow_client, 415, body, content_type="")


@pytest.mark.parametrize("data, words", [
    ("{bad", "Invalid input. Ensure that input is a valid JSON formatted string."),
    ("", "Invalid input. Ensure that input is a valid JSON formatted string."),
    ("[1, 2]", "Invalid input. The input must be a JSON dictionary with exactly one of the "
               "input fields"),
    ("3", "Received unexpected input type"),
    ('{"data": [[1, 2, 3, 4]]}', "Received dictionary with input fields: []. IMPORTANT"),
    ('{"instances": [], "inputs": []}', "Received dictionary with input fields"),
    ('{"dataframe_split": [[1]]}', "'dataframe_split' must be an object with 'data'"),
    ('{"dataframe_split": {"columns": ["a"], "data": [[1, 2]]}}', "holds 2 values for 1"),
    ('{"dataframe_records": [[1, 2]]}', "'dataframe_records' must be a list of objects"),
    ('{"dataframe_records": []}', "holds no rows"),
    ('{"instances": [{"sepal length (cm)": 1}]}', "petal length (cm)"),
    ('{"dataframe_split": {"columns": ["sepal length (cm)"], "data": [[1]]}}',
     "Missing named input: sepal width (cm)"),
    ('{"dataframe_records": [{"sepal length (cm)": "x", "sepal width (cm)": 1, '
     '"petal length (cm)": 1, "petal width (cm)": 1}]}', "column 'sepal length (cm)'"),
    ('{"instances": [[[1, 2], [3]]]}', "Failed to process element"),
])
def test_bad_json_bodies_are_400(mlflow_client: FlaskClient, data: str, words: str) -> None:
    assert words in refused(mlflow_client, 400, data=data)


MANY = 40
"""Copies of the iris rows in a body long enough for the simdjson reader."""


def _iris_split(change: int, value: Any, copies: int = 1) -> dict[str, Any]:
    rows = [list(row) for row in IRIS_ROWS * copies]
    rows[1][change] = value
    return {"dataframe_split": {"columns": IRIS_COLUMNS, "data": rows}}


def _iris_records(change: str | None, value: Any = None, copies: int = 1) -> dict[str, Any]:
    records: list[dict[str, Any]] = [dict(zip(IRIS_COLUMNS, row))
                                     for row in IRIS_ROWS * copies]
    if value is None and change is not None:
        del records[1][change]
    elif change is not None:
        records[1][change] = value
    return {"dataframe_records": records}


@pytest.mark.parametrize("copies", [1, MANY])
@pytest.mark.parametrize("body, words", [
    (_iris_split(2, "x"), "column 'petal length (cm)': JSON Value: \"x\" Type: String is "
                          "not of expected type: double"),
    (_iris_split(2, "1.5"), "column 'petal length (cm)': JSON Value: \"1.5\" Type: String"),
    (_iris_split(0, True), "column 'sepal length (cm)': JSON Value: true Type: True is not "
                           "of expected type: double"),
    (_iris_split(3, None), "column 'petal width (cm)': value 1 is missing (null or NaN)"),
    (_iris_split(3, 2 ** 60), "column 'petal width (cm)': Cannot convert JSON value"),
    ({"dataframe_split": {"columns": IRIS_COLUMNS, "data": [IRIS_ROWS[0], IRIS_ROWS[1][:3]]}},
     "row 1 of 'dataframe_split' holds 3 values for 4 columns"),
    ({"dataframe_split": {"columns": IRIS_COLUMNS[:3], "data": [r[:3] for r in IRIS_ROWS]}},
     "Missing named input: petal width (cm)"),
    (_iris_records("sepal width (cm)"), "column 'sepal width (cm)': value 1 is missing"),
    (_iris_records("sepal width (cm)", "wide"), "column 'sepal width (cm)': JSON Value: "
                                                "\"wide\" Type: String"),
    (_iris_records("sepal width (cm)", False), "column 'sepal width (cm)': JSON Value: false"),
], ids=["text", "a number as text", "a boolean", "null", "past 2**53", "ragged rows",
        "a missing column", "a record without a column", "text in a record",
        "a boolean in a record"])
def test_a_table_of_numbers_refuses_what_is_not_numbers(mlflow_client: FlaskClient,
                                                       body: Any, words: str,
                                                       copies: int) -> None:
    """The iris model's columns are all doubles: a table of plain numbers is read at once,
    and anything else is refused by the columns' checks, in MLflow's shape; a long body
    (read by simdjson) as a short one."""
    if "dataframe_split" in body:
        table = body["dataframe_split"]
        body = {"dataframe_split": {**table, "data": table["data"][:2] * copies
                                    + table["data"][2:]}}
    else:
        body = {"dataframe_records": body["dataframe_records"][:2] * copies
                + body["dataframe_records"][2:]}
    assert len(json.dumps(body)) > 768 or copies == 1  # simdjson's, or orjson's
    assert words in refused(mlflow_client, 400, body)


@pytest.mark.parametrize("copies", [1, MANY])
@pytest.mark.parametrize("token, words", [("NaN", "is missing"), ("-Infinity", "is infinite")])
def test_nan_and_infinity_tokens_are_refused_by_the_model(mlflow_client: FlaskClient,
                                                          copies: int, token: str,
                                                          words: str) -> None:
    data = json.dumps(_iris_split(1, 0.0, copies)).replace("0.0", token)
    assert f"column 'sepal width (cm)': value 1 {words}" in refused(mlflow_client, 400,
                                                                     data=data)


@pytest.mark.parametrize("copies", [1, MANY])
def test_integers_and_extra_columns_answer_as_numbers(mlflow_client: FlaskClient,
                                                      copies: int) -> None:
    whole = [[round(v) for v in row] for row in IRIS_ROWS * copies]
    split = {"dataframe_split": {"columns": IRIS_COLUMNS, "data": whole}}
    labels = invoke(mlflow_client, split)
    assert labels[0] == 200 and len(labels[1]["predictions"]) == 3 * copies
    for extra in ("a note", 1.5, [1]):
        named = {"dataframe_split": {"columns": [*IRIS_COLUMNS, "note"],
                                     "data": [[*row, extra] for row in whole]}}
        assert invoke(mlflow_client, named) == labels
    indexed = {"dataframe_split": {**split["dataframe_split"], "index": list(range(len(whole)))}}
    assert invoke(mlflow_client, indexed) == labels
    reordered = {"dataframe_split": {"columns": IRIS_COLUMNS[::-1],
                                     "data": [row[::-1] for row in whole]}}
    assert invoke(mlflow_client, reordered) == labels


@pytest.mark.parametrize("data, words", [
    ("a,b\n1\n", "Expected 2 fields in line 2, saw 1"),
    (b"\xff\xfe,a\n1,2\n", "valid UTF-8"),
    ("x\n", "holds no rows"),
    ("\n", ""),
])
def test_bad_csv_bodies_are_400(mlflow_client: FlaskClient, data: str | bytes,
                                words: str) -> None:
    assert words in refused(mlflow_client, 400, data=data, content_type="text/csv")


def test_a_failing_model_is_500_without_its_traceback(make_app: AppFactory,
                                                      tmp_path: Path) -> None:
    failing = make_app({"house": {"base_path": str(test_models.make_explaining(
        tmp_path / "house"))}}).test_client()  # a KeyError on a row without its columns
    assert refused(failing, 500, {"instances": [{"rooms": 3}]}) == (
        "model 'house' failed to predict")
    app = make_app({"echo": {"base_path": str(test_models.make_custom(tmp_path / "echo"))}})
    client = app.test_client()
    assert "'params' must be a JSON object" in refused(client, 400, {"instances": [1],
                                                                     "params": [1]})
    status, answer = invoke(client, {"dataframe_records": [{"a": 1}], "params": {"k": 2}})
    assert status == 200
    assert answer["predictions"][0]["instance"] == {"a": 1}
    # params reach an instances door as its keyword argument params, as AI Platform's
    # routines get a body's other keys (and mlflow.pyfunc's predict takes them)
    assert answer["predictions"][0]["kwargs"] == {"params": {"k": 2}}


# --- which model ---------------------------------------------------------------------------

def test_several_models_need_a_name(make_app: AppFactory,
                                    mlflow_models: dict[str, dict[str, str]]) -> None:
    client = make_app(mlflow_models).test_client()
    message = refused(client, 400, IRIS_BODIES["dataframe_split"])
    assert "3 models are served (iris, matrix, people)" in message
    assert "X-Amzn-SageMaker-Target-Model" in message and "PREDICT_MLFLOW_MODEL" in message
    for header in ("iris", "iris.tar.gz", "models/iris.tar.gz"):
        assert invoke(client, IRIS_BODIES["dataframe_split"], headers={
            "X-Amzn-SageMaker-Target-Model": header}) == (200, {"predictions": IRIS_LABELS})
    assert "no model 'nope.tar.gz' is served" in refused(
        client, 404, IRIS_BODIES["dataframe_split"],
        headers={"X-Amzn-SageMaker-Target-Model": "nope.tar.gz"})


def test_one_model_served_answers_without_a_name(
        make_app: AppFactory, mlflow_models: dict[str, dict[str, str]]) -> None:
    client = single_app(make_app, mlflow_models, "matrix").test_client()
    assert invoke(client, {"instances": IRIS_ROWS}) == (200, {"predictions": IRIS_LABELS})


def test_the_setting_must_name_a_configured_model(
        make_app: AppFactory, mlflow_models: dict[str, dict[str, str]]) -> None:
    from flask_predict.errors import ConfigError

    with pytest.raises(ConfigError, match="PREDICT_MLFLOW_MODEL: no model 'irs'; did you "
                                          "mean 'iris'?"):
        make_app(mlflow_models, mlflow_model="irs")


# --- SageMaker's side ----------------------------------------------------------------------

def test_accept_csv_answers_one_line_per_prediction(mlflow_client: FlaskClient) -> None:
    body = json.dumps(IRIS_BODIES["dataframe_split"])
    answer = mlflow_client.post("/invocations", data=body, headers={
        "Content-Type": "application/json", "Accept": "text/csv"})
    assert answer.status_code == 200 and answer.mimetype == "text/csv"
    assert answer.get_data(as_text=True) == "0\n2\n1\n"
    for accept in ("application/json", "*/*", "application/json, text/csv", "text/html"):
        answer = mlflow_client.post("/invocations", data=body, headers={
            "Content-Type": "application/json", "Accept": accept})
        assert answer.get_json() == {"predictions": IRIS_LABELS}, accept


def test_ping_health_version_and_execution_parameters(mlflow_client: FlaskClient) -> None:
    for path in ("/ping", "/health"):
        answer = mlflow_client.get(path)
        assert (answer.status_code, answer.data, answer.mimetype) == (
            200, b"\n", "text/plain")
    version = mlflow_client.get("/version")
    assert version.status_code == 200 and version.data
    assert mlflow_client.get("/execution-parameters").get_json() == {
        "MaxConcurrentTransforms": 1, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 64}


def test_execution_parameters_follow_the_settings(
        make_app: AppFactory, mlflow_models: dict[str, dict[str, str]]) -> None:
    app = single_app(make_app, mlflow_models, "iris", mlflow_max_concurrent_transforms=4,
                     mlflow_batch_strategy="SINGLE_RECORD", max_request_bytes=6 * 2**20 + 5)
    assert app.test_client().get("/execution-parameters").get_json() == {
        "MaxConcurrentTransforms": 4, "BatchStrategy": "SINGLE_RECORD", "MaxPayloadInMB": 6}


def test_ping_is_open_and_invocations_need_a_token(
        make_app: AppFactory, mlflow_models: dict[str, dict[str, str]]) -> None:
    client = single_app(make_app, mlflow_models, "iris", auth_tokens="a-token-of-16-chars").test_client()
    assert client.get("/ping").status_code == 200
    refused(client, 401, IRIS_BODIES["dataframe_split"])
    assert invoke(client, IRIS_BODIES["dataframe_split"], headers={
        "Authorization": "Bearer a-token-of-16-chars"}) == (200, {"predictions": IRIS_LABELS})


def test_ping_is_503_before_a_model_is_configured(make_app: AppFactory) -> None:
    answer = make_app({}).test_client().get("/ping")
    assert answer.status_code == 503
    assert answer.get_json()["error_code"] == "TEMPORARILY_UNAVAILABLE"


def test_a_body_over_the_limit_is_413(make_app: AppFactory,
                                      mlflow_models: dict[str, dict[str, str]]) -> None:
    client = single_app(make_app, mlflow_models, "iris", max_request_bytes=64).test_client()
    status, answer = invoke(client, IRIS_BODIES["dataframe_split"])
    assert status == 413 and answer["error_code"] == "BAD_REQUEST"


def test_requests_are_counted_and_logged_as_every_protocols(
        make_app: AppFactory, mlflow_models: dict[str, dict[str, str]],
        caplog: pytest.LogCaptureFixture) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    client = single_app(make_app, mlflow_models, "iris", metrics_path="/metrics").test_client()
    with caplog.at_level("INFO", logger="flask_predict.access"):
        assert invoke(client, IRIS_BODIES["dataframe_split"])[0] == 200
        assert invoke(client, data="{bad")[0] == 400
        assert client.get("/ping").status_code == 200
    text = client.get("/metrics").get_data(as_text=True)
    counted = {(s.labels["verb"], s.labels["code"]): s.value
               for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == "flask_predict_requests_total"
               and s.labels.get("protocol") == "mlflow"}
    assert counted[("predict", "200")] == 1 and counted[("predict", "400")] == 1
    assert counted[("health", "200")] == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "flask_predict.access"]
    assert any("method=POST path=/invocations protocol=mlflow verb=predict model=iris" in line
               and "status=200" in line for line in lines), lines
