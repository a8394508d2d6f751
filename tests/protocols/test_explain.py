"""Explanations through the Flask test client, on every route that serves them: AI
Platform's ``projects.explain``, Vertex AI's ``endpoints.explain`` (Google's
``ExplainResponse``) and KServe V1's ``:explain`` on TF Serving's paths
(``{"predictions", "explanations"}``). Attributions are checked against the libraries' own
(scikit-learn's coefficients, XGBoost's TreeSHAP); a model that cannot explain, bad input,
the request limits, the time limit and a failing explainer answer each protocol's error;
the verb is counted as inference in the metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
import xgboost as xgb
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import AppFactory
from tests.explained import assert_additive, assert_contributions, rows_of
from tests.models import make_explaining

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]
XGB_ROWS = [[None, 0.5, -1.0, 2.0], [0.01, 0.5, -1.0, 2.0]]
HOUSES = [{"rooms": 3, "age": 10}, {"rooms": 1, "age": 80}]
ML = "/v1/projects/demo/models/{}:explain"
VERTEX = "/v1/projects/demo/locations/us-central1/endpoints/{}:explain"
KSERVE = "/v1/models/{}:explain"


@pytest.fixture(scope="module")
def app(make_app: AppFactory, model_config: dict[str, Any],
        tmp_path_factory: pytest.TempPathFactory) -> Flask:
    house = make_explaining(tmp_path_factory.mktemp("explain") / "house")
    return make_app({**model_config, "house": {
        "base_path": str(house), "predictor": "custom", "class": "predictor.HousePrice",
        "timeout_seconds": 0.5}}, max_instances=3, metrics_path="/metrics")


@pytest.fixture()
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def explanations(client: FlaskClient, path: str, body: dict[str, Any]) -> Any:
    answer = client.post(path, json=body)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


@pytest.mark.parametrize("path", [ML, ML.replace(":", "/versions/1:"), VERTEX, KSERVE])
def test_sklearn_attributions_are_its_coefficients(client: FlaskClient, model_root: Path,
                                                    path: str) -> None:
    model = joblib.load(model_root / "iris" / "1" / "model.joblib")
    raw = model.decision_function(np.array(ROWS))
    answer = explanations(client, path.format("iris"), {"instances": ROWS})
    for row, attributions in enumerate(rows_of(answer["explanations"])):
        for k, attribution in enumerate(attributions):
            assert attribution["outputName"] == "decision_function"
            assert attribution["outputDisplayName"] == str(model.classes_[k])
            assert_contributions(attribution, None, model.coef_[k] * np.array(ROWS[row]),
                                 model.intercept_[k])
            assert_additive(attribution, float(raw[row, k]))


@pytest.mark.parametrize("path", [ML, VERTEX, KSERVE])
def test_xgboost_attributions_are_its_treeshap(client: FlaskClient, model_root: Path,
                                               path: str) -> None:
    booster = xgb.Booster(model_file=str(model_root / "xgb" / "1" / "model.json"))
    matrix = xgb.DMatrix(np.array(XGB_ROWS, dtype=float), missing=np.nan)
    own = booster.predict(matrix, pred_contribs=True)
    margin = booster.predict(matrix, output_margin=True)
    answer = explanations(client, path.format("xgb"), {"instances": XGB_ROWS})
    for row, (attribution,) in enumerate(rows_of(answer["explanations"])):
        assert attribution["outputName"] == "margin"
        assert list(attribution["featureAttributions"]) == ["inputs"]
        assert_contributions(attribution, None, own[row, :-1], own[row, -1])
        assert_additive(attribution, float(margin[row]))


def test_each_protocols_answer_shape(client: FlaskClient) -> None:
    body = {"instances": ROWS}
    predicted = client.post("/v1/projects/demo/models/iris:predict", json=body).get_json()
    assert set(explanations(client, ML.format("iris"), body)) == {"explanations"}
    vertex = explanations(client, VERTEX.format("iris"), {**body, "deployedModelId": "iris"})
    assert set(vertex) == {"explanations", "deployedModelId", "predictions"}
    assert vertex["deployedModelId"] == "iris"
    assert vertex["predictions"] == predicted["predictions"]
    kserve = explanations(client, KSERVE.format("iris"), body)
    assert set(kserve) == {"predictions", "explanations"}
    assert [p["predict"] for p in kserve["predictions"]] == predicted["predictions"]
    # the columnar body, and the version form, explain the same rows
    for path in (KSERVE, "/v1/models/{}/versions/1:explain"):
        columnar = explanations(client, path.format("iris"), {"inputs": ROWS})
        assert columnar["explanations"] == kserve["explanations"]


def test_a_custom_routines_own_explain_with_its_keywords(client: FlaskClient) -> None:
    body = {"instances": HOUSES, "scale": 2.0}
    for path in (ML, KSERVE):
        (first, _) = rows_of(explanations(client, path.format("house"), body)["explanations"])
        assert first[0]["featureAttributions"] == {"rooms": 180.0, "age": -10.0}
    vertex = explanations(client, VERTEX.format("house"), {"instances": HOUSES})
    assert vertex["predictions"] == [185.0, 90.0]
    assert vertex["explanations"][1]["attributions"][0]["instanceOutputValue"] == 90.0


def test_a_model_that_cannot_explain_says_what_can(client: FlaskClient) -> None:
    for path in (ML, KSERVE):
        answer = client.post(path.format("echo"), json={"instances": [1]})
        assert answer.status_code == 400
        assert "cannot explain" in answer.get_json()["error"]
        assert "XGBoost" in answer.get_json()["error"]
    answer = client.post(VERTEX.format("echo"), json={"instances": [1]})
    error = answer.get_json()["error"]
    assert answer.status_code == 400 and error["status"] == "FAILED_PRECONDITION"
    assert "cannot explain" in error["message"]


@pytest.mark.parametrize("body, status", [
    ({"instances": [[1.0, 2.0]]}, 400),  # the wrong width
    ({"instances": [[1, 2, 3, 4]] * 4}, 413),  # over PREDICT_MAX_INSTANCES
    ({"rows": [[1, 2, 3, 4]]}, 400),
])
def test_bad_input_answers_each_protocols_error(client: FlaskClient, body: Any,
                                                status: int) -> None:
    for path in (ML, KSERVE):
        answer = client.post(path.format("iris"), json=body)
        assert answer.status_code == status and isinstance(answer.get_json()["error"], str)
    vertex = client.post(VERTEX.format("iris"), json=body)  # Google's 400 for all three
    assert vertex.status_code == 400 and vertex.get_json()["error"]["status"] == \
        "INVALID_ARGUMENT"


def test_vertex_fields_of_its_explain_request(client: FlaskClient) -> None:
    for extra in ({"deployedModelId": "other"}, {"explanationSpecOverride": {}}):
        answer = client.post(VERTEX.format("iris"), json={"instances": ROWS, **extra})
        assert answer.status_code == 400
        assert answer.get_json()["error"]["status"] == "INVALID_ARGUMENT"


def test_the_time_limit_and_a_failing_explainer(client: FlaskClient) -> None:
    slow = client.post(ML.format("house"), json={"instances": HOUSES, "sleep": 5})
    assert slow.status_code == 504
    failed = client.post(KSERVE.format("house"), json={"instances": HOUSES, "fail": True})
    assert failed.status_code == 500 and "asked to fail" not in failed.get_data(as_text=True)
    assert client.post(KSERVE.format("house"), json={"instances": HOUSES}).status_code == 200


def test_tfserving_still_refuses_verbs_it_does_not_know(client: FlaskClient) -> None:
    for path in ("/v1/models/iris:EXPLAIN", "/v1/models/iris:explainer"):
        answer = client.post(path, json={"instances": ROWS})
        assert answer.status_code == 400 and "Malformed request" in answer.get_json()["error"]
    upper = client.post("/V1/MODELS/iris:explain", json={"instances": ROWS})
    assert upper.status_code == 200 and "explanations" in upper.get_json()


def test_explain_is_counted_as_inference(client: FlaskClient) -> None:
    def v2_stats() -> Any:
        return client.get("/v2/models/iris/stats").get_json()["model_stats"][0]

    before = v2_stats()
    explanations(client, KSERVE.format("iris"), {"instances": ROWS})
    explanations(client, ML.format("iris"), {"instances": ROWS})
    text = client.get("/metrics").get_data(as_text=True)
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    counted = {(s.labels["protocol"], s.labels["code"]): s.value for s in samples
               if s.name == "flask_predict_requests_total" and s.labels.get("verb") == "explain"
               and s.labels.get("model") == "iris"}
    assert counted[("tfserving", "200")] >= 1 and counted[("aiplatform", "200")] >= 1
    # the time in the predictor is KServe's request_explain_seconds, not a prediction's
    timed = {s.labels["protocol"]: s.value for s in samples
             if s.name == "request_explain_seconds_count" and s.labels["model_name"] == "iris"}
    assert timed["tfserving"] >= 1 and timed["aiplatform"] >= 1
    # V2's statistics count them as inferences, their predictor time as compute_infer
    after = v2_stats()
    assert after["inference_count"] - before["inference_count"] == 2
    infer = after["inference_stats"]["compute_infer"]
    assert infer["count"] - before["inference_stats"]["compute_infer"]["count"] == 2
