"""Vertex AI routines on the routes, through the Flask test client: the AI Platform predict
route, a Vertex AI endpoint's ``:predict`` and ``:rawPredict``, and a custom container's
predict route hand the routine the whole body and answer what it returns, as Vertex AI's CPR
model server does (its answers are the reference); bad bodies and misbehaving routines
answer each route's own error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict, close_app
from flask_predict.core.service import ModelService
from tests.routines import IRIS_ROWS, make_vertex, make_vertex_echo, vertex_answers

AIP = "/v1/projects/p/models/{}:predict"
AIP_VERSION = "/v1/projects/p/models/{}/versions/1:predict"
ENDPOINT = "/v1/projects/p/locations/europe-west4/endpoints/{}"
CONTAINER = "/v1/endpoints/7/deployedModels/8:predict"
LIMIT = 4096
"""PREDICT_MAX_REQUEST_BYTES of this app."""
BODIES: list[Any] = [
    {"instances": IRIS_ROWS},
    {"instances": IRIS_ROWS[:1], "parameters": {"scale": 1.5}},
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vertex_routes")
    make_vertex([(root / "plain" / "1", False, False), (root / "google" / "1", True, False)])
    make_vertex_echo(root / "echo" / "1")
    return root


@pytest.fixture(scope="module")
def reference(root: Path) -> dict[str, list[Any]]:
    """Google's CprModelServer's answers to :data:`BODIES`, for each routine."""
    answers = vertex_answers([(root / kind / "1", "CprPredictor", BODIES)
                              for kind in ("plain", "google")])
    found = {}
    for kind, replies in zip(("plain", "google"), answers):
        assert [status for status, _ in replies] == [200, 200]
        found[kind] = [body for _, body in replies]
    return found


@pytest.fixture(scope="module")
def app(root: Path) -> Iterator[Flask]:
    app = Flask(__name__)
    app.config.update(
        PREDICT_POLL_SECONDS=0, PREDICT_MAX_REQUEST_BYTES=LIMIT, PREDICT_MAX_INSTANCES=10,
        PREDICT_VERTEX_PREDICT_ROUTE=CONTAINER, PREDICT_VERTEX_MODEL="echo",
        PREDICT_MODELS={kind: {"base_path": str(root / kind)}
                        for kind in ("plain", "google", "echo")})
    FlaskPredict(app)
    yield app
    close_app(app)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(params=["plain", "google"], ids=["plain-class", "google-base"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def vertex_fields(model: str) -> dict[str, str]:
    return {"deployedModelId": model, "modelDisplayName": model, "modelVersionId": "1",
            "model": f"projects/p/locations/europe-west4/models/{model}"}


def test_every_route_answers_as_googles_server(client: FlaskClient, kind: str,
                                               reference: dict[str, list[Any]]) -> None:
    for body, expected in zip(BODIES, reference[kind]):
        for path in (AIP, AIP_VERSION, ENDPOINT + ":rawPredict"):
            answer = client.post(path.format(kind), json=body)
            assert (answer.status_code, answer.get_json()) == (200, expected), path
        answer = client.post(ENDPOINT.format(kind) + ":predict", json=body)
        assert answer.get_json() == {**expected, **vertex_fields(kind)}


def test_the_routine_gets_the_whole_body(client: FlaskClient) -> None:
    """As Vertex AI's server hands ``preprocess`` the request: every key of an AI Platform
    body, the ``PredictRequest`` of an endpoint, and any JSON on the raw routes."""
    body = {"instances": [{"a": 1}], "probabilities": True, "parameters": {"k": 2}}
    assert client.post(AIP.format("echo"), json=body).get_json() == {"predictions": [body]}
    vertex = {"instances": [1, "two"], "parameters": {"k": 2}}
    assert client.post(ENDPOINT.format("echo") + ":predict", json=vertex).get_json() == {
        "predictions": [vertex], **vertex_fields("echo")}
    for raw in ("a string", [1, 2], {"texts": ["no instances"]}, None, 3.5):
        for path in (ENDPOINT.format("echo") + ":rawPredict", CONTAINER):
            answer = client.post(path, data=json.dumps(raw))
            assert answer.get_json() == {"predictions": [raw]}, (path, raw)


def test_each_route_calls_the_routine_once_through_the_service(
        client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    original = ModelService.predict_request

    def counted(self: ModelService, loaded: Any, body: Any) -> Any:
        calls.append(body)
        return original(self, loaded, body)

    monkeypatch.setattr(ModelService, "predict_request", counted)
    body = {"instances": [1]}
    for path in (AIP.format("echo"), ENDPOINT.format("echo") + ":predict",
                 ENDPOINT.format("echo") + ":rawPredict", CONTAINER):
        assert client.post(path, json=body).status_code == 200
    assert calls == [body] * 4


def test_an_endpoint_takes_predictions_and_metadata_from_the_answer(
        client: FlaskClient) -> None:
    body = {"instances": [1], "parameters": {"ask": "metadata"}}
    endpoint = client.post(ENDPOINT.format("echo") + ":predict", json=body).get_json()
    assert endpoint == {"predictions": [body], "metadata": {"served_by": "echo"},
                        **vertex_fields("echo")}
    raw = client.post(ENDPOINT.format("echo") + ":rawPredict", json=body).get_json()
    assert raw == {"predictions": [body], "metadata": {"served_by": "echo"}, "other": 1}


def test_an_answer_without_predictions_fails_on_an_endpoint_only(client: FlaskClient) -> None:
    body = {"instances": [1], "parameters": {"ask": "bare"}}
    answer = client.post(ENDPOINT.format("echo") + ":predict", json=body)
    assert answer.status_code == 500
    assert answer.get_json()["error"] == {
        "code": 500, "status": "INTERNAL",
        "message": "model 'echo' answered without a \"predictions\" list, which an endpoint's "
                   ":predict answer needs (:rawPredict answers as the model does)"}
    for path in (AIP.format("echo"), ENDPOINT.format("echo") + ":rawPredict", CONTAINER):
        assert client.post(path, json=body).get_json() == [body]


def error_of(answer: Any, path: str) -> tuple[int, str]:
    """Status and message of an error in the route's own format: Google's envelope on an
    endpoint's :predict, ``{"error": "<message>"}`` on the others; always JSON."""
    assert answer.content_type == "application/json", answer.data
    error = answer.get_json()["error"]
    if path.endswith("endpoints/echo:predict"):
        assert error["code"] == answer.status_code
        return answer.status_code, str(error["message"])
    assert isinstance(error, str)
    return answer.status_code, error


ROUTES = [AIP.format("echo"), ENDPOINT.format("echo") + ":predict",
          ENDPOINT.format("echo") + ":rawPredict", CONTAINER]


@pytest.mark.parametrize("path", ROUTES, ids=["aiplatform", "endpoint", "raw", "container"])
@pytest.mark.parametrize("data, status, message", [
    (b"{not json", 400, "JSON Parse error"),
    (b"", 400, "The document is empty"),
    (b"[" * 200 + b"]" * 200, 400, "nested"),
    (json.dumps({"instances": ["x" * LIMIT]}).encode(), 413, "over the limit"),
    (json.dumps({"instances": list(range(11))}).encode(), 413,
     "the request holds 11 instances; the limit is 10"),
    (b'{"instances": [1], "parameters": {"ask": "raise"}}', 500,
     "model 'echo' failed to predict"),
    (b'{"instances": [1], "parameters": {"ask": "set"}}', 500,
     "model 'echo' answered a value that is not JSON: set is not JSON serializable"),
    (b'{"instances": [1], "parameters": {"ask": "circular"}}', 500,
     "model 'echo' answered a value that is not JSON"),
], ids=["not-json", "empty", "deep", "huge", "many", "preprocess-raises", "set", "circular"])
def test_bad_bodies_and_routines_answer_the_routes_error(
        client: FlaskClient, path: str, data: bytes, status: int, message: str) -> None:
    answer = client.post(path, data=data, content_type="application/json")
    got_status, got_message = error_of(answer, path)
    # Google's envelope answers an oversized request 400 INVALID_ARGUMENT
    assert got_status == (400 if status == 413 and "endpoints/echo:predict" in path
                          else status), answer.data
    assert message in got_message


@pytest.mark.parametrize("path, message", [
    (AIP.format("echo"), "Invalid request: the body must be a JSON object"),
    (ENDPOINT.format("echo") + ":predict",
     "Invalid JSON payload received. Expected an object, got an array."),
], ids=["aiplatform", "endpoint"])
def test_predict_routes_want_an_object(client: FlaskClient, path: str, message: str) -> None:
    assert error_of(client.post(path, json=[1]), path) == (400, message)


def test_an_endpoint_refuses_what_vertex_ai_refuses(client: FlaskClient) -> None:
    path = ENDPOINT.format("echo") + ":predict"
    for body, message in [({"instances": [1], "extra": 1}, 'Unknown name "extra"'),
                          ({"parameters": {}}, "Field: instances; Message: Required")]:
        status, got = error_of(client.post(path, json=body), path)
        assert status == 400 and message in got
