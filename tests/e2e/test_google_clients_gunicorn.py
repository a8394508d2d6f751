"""Google's own clients, unchanged, against real gunicorn with 2 sync workers.

``google-api-python-client`` with its bundled discovery documents (``ml v1`` for AI Platform,
``aiplatform v1`` for Vertex AI) and the ``google-cloud-aiplatform`` SDK's
``PredictionServiceClient`` over REST; anonymous credentials, no network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import PredictionServiceClient
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError

from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

ROW = [5.1, 3.5, 1.4, 0.2]
ENDPOINTS = {"1234": "iris", "echo": "echo", "5678": {"model": "iris", "version": "v1"}}
ENDPOINT = "projects/demo/locations/us-central1/endpoints/{}"


@pytest.fixture(scope="module")
def server(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GunicornServer]:
    models = {**model_config, "iris": {**model_config["iris"], "version_labels": {"v1": 1}}}
    env = {"FLASK_PREDICT_VERTEX_ENDPOINTS": json.dumps(ENDPOINTS),
           "FLASK_PREDICT_AIPLATFORM_PROJECTS": '["demo"]'}
    log = tmp_path_factory.mktemp("google") / "gunicorn.log"
    with GunicornServer(models, workers=2, env=env, log_path=log,
                        ready_path="/v1/projects/demo/models/iris") as running:
        yield running


def client(server: GunicornServer, api: str) -> Any:
    """A discovery client for *api* v1 built from the bundled document, aimed at *server*."""
    return build(api, "v1", credentials=AnonymousCredentials(), static_discovery=True,
                 client_options={"api_endpoint": server.url})


@pytest.fixture(scope="module")
def ml(server: GunicornServer) -> Any:
    return client(server, "ml").projects()


@pytest.fixture(scope="module")
def endpoints(server: GunicornServer) -> Any:
    return client(server, "aiplatform").projects().locations().endpoints()


@pytest.fixture(scope="module")
def sdk(server: GunicornServer) -> PredictionServiceClient:
    return PredictionServiceClient(transport="rest", credentials=AnonymousCredentials(),
                                   client_options={"api_endpoint": server.url})


def http_error(call: Any) -> HttpError:
    with pytest.raises(HttpError) as raised:
        call.execute()
    return raised.value


# --- AI Platform: ml v1 ------------------------------------------------------------------------

def test_ml_predict_with_model_and_version_names(ml: Any) -> None:
    body = {"instances": [ROW, [6.7, 3.0, 5.2, 2.3]]}
    assert ml.predict(name="projects/demo/models/iris", body=body).execute() == \
        {"predictions": [0, 2]}
    assert ml.predict(name="projects/demo/models/iris/versions/v1", body=body).execute() == \
        {"predictions": [0, 2]}


def test_ml_extra_keys_reach_a_custom_predictor_as_keywords(ml: Any) -> None:
    answer = ml.predict(name="projects/demo/models/echo",
                        body={"instances": [2, "x"], "probabilities": True,
                              "signature_name": "s"}).execute()
    first, second = answer["predictions"]
    assert first == {"instance": 2, "scaled": 4.0,
                     "kwargs": {"probabilities": True, "signature_name": "s"}}
    assert second["instance"] == "x"


def test_ml_routing_errors_show_their_message(ml: Any) -> None:
    error = http_error(ml.predict(name="projects/demo/models/nope", body={"instances": [ROW]}))
    assert error.status_code == 404
    assert error.reason == 'Field: name Error: The model resource: "nope" was not found.'
    assert error.error_details[0]["fieldViolations"][0]["field"] == "name"
    error = http_error(ml.predict(name="projects/demo/models/iris/versions/v9",
                                  body={"instances": [ROW]}))
    assert error.status_code == 404 and '"v9"' in error.reason
    error = http_error(ml.predict(name="projects/other/models/iris", body={"instances": [ROW]}))
    assert error.status_code == 404 and '"other" was not found' in error.reason
    error = http_error(ml.models().get(name="projects/demo/models/nope"))
    assert error.status_code == 404 and '"nope" was not found' in error.reason


def test_ml_prediction_errors_stay_a_string(ml: Any) -> None:
    error = http_error(ml.predict(name="projects/demo/models/iris", body={"instances": [[1]]}))
    assert error.status_code == 400
    assert "expected shape" in json.loads(error.content)["error"]
    error = http_error(ml.predict(name="projects/demo/models/echo",
                                  body={"instances": [1], "fail": True}))
    assert error.status_code == 500
    assert json.loads(error.content) == {"error": "model 'echo' failed to predict"}


def test_ml_describes_models(ml: Any) -> None:
    model = ml.models().get(name="projects/demo/models/xgb").execute()
    assert model["defaultVersion"]["framework"] == "XGBOOST"
    version = ml.models().versions().get(name="projects/demo/models/iris/versions/v1").execute()
    assert version["name"] == "projects/demo/models/iris/versions/v1" and version["isDefault"]


# --- Vertex AI: aiplatform v1 ------------------------------------------------------------------

def test_vertex_predict_through_an_endpoint_map(endpoints: Any) -> None:
    answer = endpoints.predict(endpoint=ENDPOINT.format("1234"),
                               body={"instances": [ROW]}).execute()
    assert answer == {"predictions": [0], "deployedModelId": "iris",
                      "model": "projects/demo/locations/us-central1/models/iris",
                      "modelDisplayName": "iris", "modelVersionId": "1"}
    pinned = endpoints.predict(endpoint=ENDPOINT.format("5678"),
                               body={"instances": [ROW]}).execute()
    assert pinned["predictions"] == [0] and pinned["modelVersionId"] == "1"


def test_vertex_parameters_reach_a_custom_predictor(endpoints: Any) -> None:
    body = {"instances": [3], "parameters": {"top_k": 2, "labels": ["a"]}}
    answer = endpoints.predict(endpoint=ENDPOINT.format("echo"), body=body).execute()
    assert answer["predictions"] == [
        {"instance": 3, "scaled": 6.0, "kwargs": {"parameters": {"top_k": 2, "labels": ["a"]}}}]


def test_vertex_raw_predict_passes_the_body_through(endpoints: Any) -> None:
    body = {"instances": [3], "mode": "raw"}
    answer = endpoints.rawPredict(endpoint=ENDPOINT.format("echo"), body=body).execute()
    assert answer == {"predictions": [{"instance": 3, "scaled": 6.0,
                                       "kwargs": {"mode": "raw"}}]}


def test_vertex_errors_show_their_message(endpoints: Any) -> None:
    error = http_error(endpoints.predict(endpoint=ENDPOINT.format("iris"),
                                         body={"instances": [ROW]}))
    assert error.status_code == 404
    assert error.reason == \
        "Endpoint `projects/demo/locations/us-central1/endpoints/iris` not found."
    error = http_error(endpoints.predict(endpoint="projects/other/locations/l/endpoints/1234",
                                         body={"instances": [ROW]}))
    assert error.status_code == 404 and "not found" in error.reason
    error = http_error(endpoints.predict(endpoint=ENDPOINT.format("1234"),
                                         body={"instances": [[1]]}))
    assert error.status_code == 400 and "expected shape" in error.reason
    error = http_error(endpoints.predict(endpoint=ENDPOINT.format("1234"),
                                         body={"instances": [ROW], "top_k": 1}))
    assert error.status_code == 400 and 'Unknown name "top_k"' in error.reason
    error = http_error(endpoints.predict(endpoint=ENDPOINT.format("echo"),
                                         body={"instances": [1], "parameters": {"fail": 1}}))
    assert error.status_code == 500 and error.reason == "model 'echo' failed to predict"


# --- Vertex AI: the google-cloud-aiplatform SDK ------------------------------------------------

def test_sdk_predict(sdk: PredictionServiceClient) -> None:
    answer = sdk.predict(endpoint=ENDPOINT.format("1234"), instances=[ROW, [6.7, 3.0, 5.2, 2.3]])
    assert list(answer.predictions) == [0, 2]
    assert answer.deployed_model_id == "iris" and answer.model_version_id == "1"
    assert answer.model == "projects/demo/locations/us-central1/models/iris"


def test_sdk_parameters_reach_a_custom_predictor(sdk: PredictionServiceClient) -> None:
    answer = sdk.predict(endpoint=ENDPOINT.format("echo"), instances=["a"],
                         parameters={"threshold": 0.25})
    (prediction,) = answer.predictions
    assert prediction["instance"] == "a"
    assert dict(prediction["kwargs"]["parameters"]) == {"threshold": 0.25}


def test_sdk_errors(sdk: PredictionServiceClient) -> None:
    with pytest.raises(exceptions.NotFound) as missing:
        sdk.predict(endpoint=ENDPOINT.format("nope"), instances=[ROW])
    assert "Endpoint `projects/demo/locations/us-central1/endpoints/nope` not found." in \
        missing.value.message
    with pytest.raises(exceptions.BadRequest) as bad:
        sdk.predict(endpoint=ENDPOINT.format("1234"), instances=[[1, 2]])
    assert "expected shape" in bad.value.message
    with pytest.raises(exceptions.InternalServerError) as failed:
        sdk.predict(endpoint=ENDPOINT.format("echo"), instances=[1],
                    parameters={"fail": True})
    assert "model 'echo' failed to predict" in failed.value.message

