"""Vertex AI's endpoint API, project and endpoint settings, and the container's health route,
through the Flask test client (Google's own clients: tests/e2e/test_google_clients_gunicorn.py)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict.settings.app import read_settings
from flask_predict.settings.environ import config_from_environ
from flask_predict.errors import ConfigError

ENDPOINT = "/v1/projects/p/locations/us-central1/endpoints/{}"
ROW = [5.1, 3.5, 1.4, 0.2]


def envelope(answer: Any, status: int, name: str) -> str:
    """The message of a Google error envelope, after checking its shape."""
    assert answer.status_code == status, answer.data
    assert answer.content_type == "application/json"
    body = answer.get_json()
    assert set(body) == {"error"} and isinstance(body["error"], dict), body
    assert body["error"]["code"] == status and body["error"]["status"] == name
    message: str = body["error"]["message"]
    return message


def test_predict_answers_vertex_fields(client: FlaskClient) -> None:
    answer = client.post(ENDPOINT.format("iris") + ":predict", json={"instances": [ROW, ROW]})
    assert answer.get_json() == {
        "predictions": [0, 0], "deployedModelId": "iris",
        "model": "projects/p/locations/us-central1/models/iris",
        "modelDisplayName": "iris", "modelVersionId": "1"}
    with_parameters = client.post(ENDPOINT.format("xgb") + ":predict",
                                  json={"instances": [[0, 0, 0, 0]], "parameters": {"a": 1}})
    assert with_parameters.status_code == 200  # built-in predictors ignore parameters


def test_parameters_reach_a_custom_predictor_as_one_keyword(client: FlaskClient) -> None:
    body = {"instances": [1, "a"], "parameters": {"threshold": 0.5, "top_k": 2}}
    answer = client.post(ENDPOINT.format("echo") + ":predict", json=body)
    first, second = answer.get_json()["predictions"]
    assert first["kwargs"] == {"parameters": {"threshold": 0.5, "top_k": 2}}
    assert second["instance"] == "a"
    bare = client.post(ENDPOINT.format("echo") + ":predict", json={"instances": [1]})
    assert bare.get_json()["predictions"][0]["kwargs"] == {}


@pytest.mark.parametrize("body, status, name, text", [
    ({"instances": [[1, 2]]}, 400, "INVALID_ARGUMENT", "expected shape"),
    ({"instances": [ROW], "probabilities": True}, 400, "INVALID_ARGUMENT",
     'Unknown name "probabilities"'),
    ({"parameters": {}}, 400, "INVALID_ARGUMENT", "Field: instances; Message: Required"),
    ({"instances": []}, 400, "INVALID_ARGUMENT", "Field: instances; Message: Required"),
    ({"instances": {"a": 1}}, 400, "INVALID_ARGUMENT", "Invalid value at 'instances'"),
    ([ROW], 400, "INVALID_ARGUMENT", "Expected an object"),
])
def test_request_errors_answer_googles_envelope(client: FlaskClient, body: Any, status: int,
                                                name: str, text: str) -> None:
    answer = client.post(ENDPOINT.format("iris") + ":predict", json=body)
    assert text in envelope(answer, status, name)


def test_bad_json_and_a_failing_predictor(client: FlaskClient) -> None:
    bad = client.post(ENDPOINT.format("iris") + ":predict", data=b"{not json")
    assert "JSON Parse error" in envelope(bad, 400, "INVALID_ARGUMENT")
    failed = client.post(ENDPOINT.format("echo") + ":predict",
                         json={"instances": [1], "parameters": {"fail": True}})
    assert envelope(failed, 500, "INTERNAL") == "model 'echo' failed to predict"
    refused = client.post(ENDPOINT.format("xgb") + ":predict",
                          data=b'{"instances": [[Infinity, 0, 0, 0]]}')
    assert "feature 0: value 0 is infinite" in envelope(refused, 400, "FAILED_PRECONDITION")
    raised = client.post(ENDPOINT.format("echo") + ":rawPredict",
                         json={"instances": [1], "fail": True})
    assert raised.status_code == 500 and raised.get_json() == {
        "error": "model 'echo' failed to predict"}


def test_unknown_endpoint(client: FlaskClient) -> None:
    answer = client.post(ENDPOINT.format("nope") + ":predict", json={"instances": [ROW]})
    assert envelope(answer, 404, "NOT_FOUND") == \
        "Endpoint `projects/p/locations/us-central1/endpoints/nope` not found."
    raw = client.post(ENDPOINT.format("nope") + ":rawPredict", json={"instances": [ROW]})
    assert "not found" in envelope(raw, 404, "NOT_FOUND")


def test_body_over_the_limit(make_app: Any, model_config: dict[str, Any]) -> None:
    client = make_app(model_config, max_request_bytes=100).test_client()
    answer = client.post(ENDPOINT.format("iris") + ":predict", json={"instances": [ROW] * 20})
    assert "over the limit" in envelope(answer, 400, "INVALID_ARGUMENT")


def test_raw_predict_takes_the_container_body(client: FlaskClient) -> None:
    answer = client.post(ENDPOINT.format("echo") + ":rawPredict",
                         json={"instances": [3], "parameters": {"a": 1}, "extra": True})
    assert answer.status_code == 200
    (prediction,) = answer.get_json()["predictions"]
    assert prediction["kwargs"] == {"parameters": {"a": 1}, "extra": True}
    bad = client.post(ENDPOINT.format("iris") + ":rawPredict", json={"instances": [[1, 2]]})
    assert bad.status_code == 400 and isinstance(bad.get_json()["error"], str)


def test_endpoint_map(make_app: Any, model_config: dict[str, Any], tmp_path: Path) -> None:
    endpoints = {"1234": "iris", "5678": {"model": "echo", "version": 1}}
    client = make_app(model_config, vertex_endpoints=json.dumps(endpoints)).test_client()
    iris = client.post(ENDPOINT.format("1234") + ":predict", json={"instances": [ROW]})
    assert iris.get_json()["predictions"] == [0] and iris.get_json()["deployedModelId"] == "iris"
    echo = client.post(ENDPOINT.format("5678") + ":predict", json={"instances": [1]})
    assert echo.get_json()["modelVersionId"] == "1"
    unmapped = client.post(ENDPOINT.format("iris") + ":predict", json={"instances": [ROW]})
    assert "not found" in envelope(unmapped, 404, "NOT_FOUND")


@pytest.mark.parametrize("endpoints, text", [
    ({"1": "nope"}, "no model 'nope'"),
    ({"1": {"model": "iris", "version": "v2"}}, "neither a version name"),
    ({"1": {"model": "iris", "versoin": 1}}, "unknown key(s) ['versoin']"),
    ({"a/b": "iris"}, "without '/' or ':'"),
    (["iris"], "must map endpoint ids"),
    ("{", "not valid JSON"),
])
def test_endpoint_map_mistakes_stop_the_app(model_config: dict[str, Any], endpoints: Any,
                                            text: str) -> None:
    with pytest.raises(ConfigError) as error:
        read_settings({"PREDICT_MODELS": model_config, "PREDICT_VERTEX_ENDPOINTS": endpoints})
    assert text in error.value.message


def test_project_allowlist(make_app: Any, model_config: dict[str, Any]) -> None:
    client = make_app(model_config, aiplatform_projects="demo, prod").test_client()
    body = {"instances": [ROW]}
    assert client.post("/v1/projects/prod/models/iris:predict", json=body).status_code == 200
    assert client.post("/v1/projects/demo/locations/l/endpoints/iris:predict",
                       json=body).status_code == 200
    other = client.post("/v1/projects/other/models/iris:predict", json=body)
    assert 'The project resource: "other" was not found.' in envelope(other, 404, "NOT_FOUND")
    assert client.get("/v1/projects/other/models/iris").status_code == 404
    vertex = client.post("/v1/projects/other/locations/l/endpoints/iris:predict", json=body)
    assert "not found" in envelope(vertex, 404, "NOT_FOUND")
    everyone = make_app(model_config).test_client()
    assert everyone.post("/v1/projects/other/models/iris:predict", json=body).status_code == 200


def test_health_says_why_it_is_not_ready(make_app: Any, model_config: dict[str, Any]) -> None:
    route = "/v1/endpoints/1/deployedModels/2"
    empty = make_app({}, vertex_health_route=route).test_client().get(route)
    assert empty.status_code == 503 and "no model is configured" in empty.get_json()["error"]
    several = make_app(model_config, vertex_health_route=route).test_client().get(route)
    assert several.status_code == 503 and "PREDICT_VERTEX_MODEL" in several.get_json()["error"]
    one = make_app(model_config, vertex_health_route=route, vertex_model="xgb").test_client()
    assert one.get(route).status_code == 200 and one.get(route).get_json() == {}


def test_storage_uri_on_cloud_storage_is_the_base_path() -> None:
    # resolved with every model path, into the cache (tests/storage, tests/e2e/test_storage_*)
    assert config_from_environ({"AIP_STORAGE_URI": "gs://bucket/model"}) == \
        {"PREDICT_MODELS": {"model": {"base_path": "gs://bucket/model"}}}
    # a model configured another way leaves the storage URI unused
    assert config_from_environ({"AIP_STORAGE_URI": "gs://bucket/model",
                                "MODEL_CONFIG_FILE": "/srv/models.json"}) == \
        {"PREDICT_MODEL_CONFIG_FILE": "/srv/models.json"}


def test_storage_uri_local_folder_is_served(make_app: Any, model_root: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    flat = model_root / "iris" / "1"  # the artifacts themselves, as Vertex AI stores them
    config = config_from_environ({"AIP_STORAGE_URI": f"file://{flat}"})
    (spec,) = read_settings(config).models
    assert spec.name == "model" and Path(spec.base_path).resolve() == flat.resolve()
    app: Flask = make_app(config["PREDICT_MODELS"])
    answer = app.test_client().post("/v1/projects/p/models/model:predict",
                                    json={"instances": [ROW]})
    assert answer.get_json() == {"predictions": [0]}
    versions = config_from_environ({"AIP_STORAGE_URI": str(model_root / "xgb"),
                                    "MODEL_NAME": "xgb"})
    assert versions["PREDICT_MODELS"] == {"xgb": {"base_path": str(model_root / "xgb")}}
    with pytest.raises(ConfigError, match="not a directory"):
        config_from_environ({"AIP_STORAGE_URI": str(model_root / "missing")})
