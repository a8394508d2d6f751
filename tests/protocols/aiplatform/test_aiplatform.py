"""AI Platform projects.predict conformance, through the Flask test client."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict.protocols.aiplatform.instances import decode_predict
from flask_predict.errors import InvalidInput
from tests.protocols.compare import assert_json_close

CASES = sorted((Path(__file__).parent / "cases").glob("*.request.json"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name.split(".")[0])
def test_case(client: FlaskClient, case: Path) -> None:
    sent = json.loads(case.read_text())
    expected = json.loads(case.with_name(case.name.replace(".request.", ".expected.")).read_text())
    got = client.post(sent["path"], data=json.dumps(sent["body"]),
                      content_type="application/json")
    assert got.status_code == expected["status"], got.data
    assert got.content_type == "application/json"
    body = got.get_json()
    assert set(body) == ({"predictions"} if got.status_code == 200 else {"error"})
    if expected["body"] is not None:
        assert_json_close(body, expected["body"])


def post(client: FlaskClient, path: str, text: str | bytes, **kwargs: Any) -> Any:
    return client.post(f"/v1/projects/p/models/{path}", data=text, **kwargs)


def test_xgboost_nan_and_null_are_missing(client: FlaskClient) -> None:
    answer = post(client, "xgb:predict", '{"instances": [[NaN,0,0,0],[null,0,0,0],[0.0,0,0,0]]}')
    missing, null, zero = answer.get_json()["predictions"]
    assert missing > 0.9 and null == missing and zero < 0.1


def test_sklearn_refuses_nan_with_a_400_that_says_so(client: FlaskClient) -> None:
    answer = post(client, "iris:predict", '{"instances": [[1, 2, NaN, 3]]}')
    assert answer.status_code == 400
    assert answer.get_json()["error"] == ("feature 2: value 0 is missing (null or NaN); the "
                                          "model takes no missing value there")


def test_xgboost_infinity_is_a_400(client: FlaskClient) -> None:
    answer = post(client, "xgb:predict", '{"instances": [[Infinity, 0, 0, 0]]}')
    assert answer.status_code == 400
    assert answer.get_json()["error"].startswith("feature 0: value 0 is infinite")


def test_float32_outputs_are_printed_as_their_double_value(client: FlaskClient) -> None:
    text = post(client, "xgb:predict", '{"instances": [[NaN,0,0,0]]}').get_data(as_text=True)
    value = json.loads(text)["predictions"][0]
    assert len(repr(value)) > 12  # float32 widened through tolist(), as Google's runtime


def test_custom_predictions_keep_json_types(client: FlaskClient) -> None:
    answer = post(client, "echo:predict", json.dumps({"instances": [7, False]}))
    first, second = answer.get_json()["predictions"]
    assert first["instance"] == 7 and type(first["instance"]) is int
    assert second["instance"] is False


def test_custom_predictor_can_emit_nan(client: FlaskClient) -> None:
    answer = post(client, "echo:predict", '{"instances": [NaN]}')
    assert b'"instance":NaN' in answer.data


@pytest.mark.parametrize("text", [b"", b"{", b"not json", b"\xff\xfe", b'{"instances": [1,]}'])
def test_broken_bodies(client: FlaskClient, text: bytes) -> None:
    answer = post(client, "iris:predict", text)
    assert answer.status_code == 400 and "JSON Parse error" in answer.get_json()["error"]


def test_deeply_nested_body(client: FlaskClient) -> None:
    text = '{"instances": ' + "[" * 10_000 + "]" * 10_000 + "}"
    answer = post(client, "iris:predict", text)
    assert answer.status_code == 400 and "nested too deeply" in answer.get_json()["error"]


def test_moderately_nested_rows(client: FlaskClient) -> None:
    answer = post(client, "iris:predict", '{"instances": ' + "[" * 60 + "1" + "]" * 60 + "}")
    assert answer.status_code == 400


def test_no_content_type_is_read(client: FlaskClient) -> None:
    answer = post(client, "iris:predict", b'{"instances": [[5.1,3.5,1.4,0.2]]}', content_type="")
    assert answer.get_json() == {"predictions": [0]}


def test_body_over_the_limit_is_413(make_app: Any, model_config: dict[str, Any]) -> None:
    app: Flask = make_app(model_config, max_request_bytes=1000)
    client = app.test_client()
    answer = post(client, "iris:predict", json.dumps({"instances": [[1.0, 2.0, 3.0, 4.0]] * 200}))
    assert answer.status_code == 413 and "over the limit" in answer.get_json()["error"]
    chunked = client.post("/v1/projects/p/models/iris:predict",
                          input_stream=io.BytesIO(b"[" * 5000),
                          headers={"Transfer-Encoding": "chunked"},
                          environ_base={"wsgi.input_terminated": True})
    assert chunked.status_code == 413


@pytest.mark.parametrize("method, path", [
    ("GET", "/v1/projects/p/models/iris:predict"),
    ("PUT", "/v1/projects/p/models/iris:predict"),
    ("DELETE", "/v1/projects/p/models/iris"),
    ("POST", "/v1/projects/p/models/iris:getIamPolicy"),
    ("POST", "/v1/projects/p/models"),
    ("GET", "/v1/projects/p/locations/l/endpoints/iris:predict"),
    ("POST", "/v1/projects/p/locations/l/endpoints/iris:streamRawPredict"),
    ("POST", "/v1/projects/p/locations/l/endpoints/iris/x:predict"),
])
def test_unknown_routes_and_methods_answer_googles_envelope(client: FlaskClient, method: str,
                                                            path: str) -> None:
    answer = client.open(path, method=method, json={"instances": [[1, 2, 3, 4]]})
    assert answer.status_code == 404 and answer.content_type == "application/json"
    error = answer.get_json()["error"]
    assert error["code"] == 404 and error["status"] == "NOT_FOUND"
    assert error["message"].startswith(f"Method not found: {method} {path}")


def test_worker_survives_a_failing_predictor(client: FlaskClient) -> None:
    assert post(client, "echo:predict", '{"instances": [1], "fail": true}').status_code == 500
    assert post(client, "echo:predict", '{"instances": [1]}').status_code == 200


def test_versions_by_name_and_default(make_app: Any, model_root: Path, tmp_path: Path) -> None:
    import shutil

    base = tmp_path / "iris"
    shutil.copytree(model_root / "iris" / "1", base / "1")
    shutil.copytree(model_root / "iris" / "1", base / "2")
    app = make_app({"iris": {"base_path": str(base), "version_labels": {"v1": 1, "v2": 2},
                             "default_version": "v1"}})
    client = app.test_client()
    body = '{"instances": [[5.1,3.5,1.4,0.2]]}'
    assert post(client, "iris/versions/v1:predict", body).status_code == 200
    assert post(client, "iris/versions/v2:predict", body).status_code == 200
    assert post(client, "iris/versions/2:predict", body).status_code == 200
    assert post(client, "iris:predict", body).status_code == 200
    state = app.extensions["predict"]
    assert state.service.repository.get("iris").version == 1


def test_decode_predict_splits_kwargs() -> None:
    instances, kwargs = decode_predict({"instances": [1], "a": 2, "signature_name": "s"})
    assert instances == [1] and kwargs == {"a": 2, "signature_name": "s"}
    with pytest.raises(InvalidInput):
        decode_predict({"instances": None})


def test_describe_model_and_version(client: FlaskClient) -> None:
    model = client.get("/v1/projects/p/models/iris").get_json()
    assert model == {"name": "projects/p/models/iris", "defaultVersion": {
        "name": "projects/p/models/iris/versions/1", "state": "READY", "isDefault": True,
        "framework": "SCIKIT_LEARN"}}
    version = client.get("/v1/projects/p/models/xgb/versions/1").get_json()
    assert version["framework"] == "XGBOOST" and version["isDefault"] is True
    assert client.get("/v1/projects/p/models/iris/versions/3").status_code == 404
    assert client.get("/v1/projects/p/models/nope").status_code == 404


def test_vertex_ai_routes(make_app: Any, model_config: dict[str, Any]) -> None:
    route = "/v1/endpoints/123/deployedModels/456"
    app = make_app({"iris": model_config["iris"]}, vertex_predict_route=route + ":predict",
                   vertex_health_route=route)
    client = app.test_client()
    assert client.get(route).status_code == 200
    answer = client.post(route + ":predict",
                         json={"instances": [[5.1, 3.5, 1.4, 0.2]], "parameters": {"a": 1}})
    assert answer.get_json() == {"predictions": [0]}
    bad = client.post(route + ":predict", json={"instances": [[1, 2]]})
    assert bad.status_code == 400 and "expected shape" in bad.get_json()["error"]


def test_vertex_route_needs_one_model(make_app: Any, model_config: dict[str, Any]) -> None:
    app = make_app(model_config, vertex_predict_route="/predict")
    answer = app.test_client().post("/predict", json={"instances": [[1, 2, 3, 4]]})
    assert answer.status_code == 404 and "PREDICT_VERTEX_MODEL" in answer.get_json()["error"]
    app = make_app(model_config, vertex_predict_route="/predict", vertex_model="iris")
    assert app.test_client().post("/predict", json={"instances": [[5.1, 3.5, 1.4, 0.2]]}) \
        .get_json() == {"predictions": [0]}
