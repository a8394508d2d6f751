"""The OpenAPI document: valid, up to date in docs/, and describing exactly the routes the
app registers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from openapi_spec_validator import validate

from flask_predict import ConfigError
from flask_predict.openapi import (UNDOCUMENTED_VERBS, app_operations, build_document,
                                   document_operations, part, standalone_document)
from flask_predict.openapi.schemas import Part
from flask_predict.request.protocol_table import REGISTRY, descriptor
from tests.conftest import AppFactory

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "docs" / "openapi.json"


def assert_same_routes(app: Flask, document: dict[str, Any]) -> None:
    served, described = app_operations(app), document_operations(document)
    missing = sorted(served - described)
    extra = sorted(described - served)
    assert not missing and not extra, (
        "the OpenAPI document and the app's routes differ (add a route to its protocol's "
        "part, protocols/<name>/openapi.py, or give it an UNDOCUMENTED_VERBS verb in its "
        f"protocol's descriptor if it only answers errors):\n  registered, not in the document: {missing}\n"
        f"  in the document, not registered: {extra}")


def test_every_protocol_has_its_part() -> None:
    for name in REGISTRY:
        assert isinstance(part(name), Part), name


def test_checked_in_document_is_up_to_date() -> None:
    assert CHECKED_IN.read_text(encoding="utf-8") == standalone_document(), (
        "docs/openapi.json is out of date: run `make openapi`")


def test_checked_in_document_is_valid_openapi() -> None:
    validate(json.loads(CHECKED_IN.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def standalone(make_app: AppFactory, model_config: dict[str, Any]) -> Flask:
    """Every protocol and the document's route, as the standalone server has them."""
    return make_app(model_config, openapi_route="/openapi.json")


def test_served_document_describes_every_route(standalone: Flask) -> None:
    answer = standalone.test_client().get("/openapi.json")
    assert answer.status_code == 200
    assert answer.mimetype == "application/json"
    document = answer.get_json()
    validate(document)
    assert_same_routes(standalone, document)
    assert document == json.loads(standalone_document())


def test_undocumented_routes_only_answer_errors(standalone: Flask) -> None:
    undocumented = set()
    for rule in standalone.url_map.iter_rules():
        name = rule.endpoint.partition(".")[0].removeprefix("predict_")
        view = standalone.view_functions[rule.endpoint].__name__
        if name in REGISTRY and descriptor(name).verb(view) in UNDOCUMENTED_VERBS:
            undocumented.add(rule.endpoint)
    assert len(undocumented) == 7, undocumented  # each protocol's catch-alls, TF's dispatch
    client = standalone.test_client()
    for url, status, body in [("/v1/projects/p/nothing", 404, "error"),
                              ("/v1/models", 400, "error"), ("/V1/models/iris", 400, "error"),
                              ("/v2/nothing", 404, "error"), ("/v2", 404, "error"),
                              ("/grps/v1/nothing", 404, "status")]:
        answer = client.post(url, data="{}")
        assert answer.status_code == status, url
        assert set(answer.get_json()) == {body}  # the protocol's error body


def test_prefix_protocols_and_vertex_routes(make_app: AppFactory,
                                            model_config: dict[str, Any]) -> None:
    """The document follows the settings: only the protocols served, the URL prefix as the
    server URL, and Vertex AI's routes when they are configured."""
    app = make_app({"iris": model_config["iris"]}, openapi_route="/api.json",
                   url_prefix="/ml", protocols=["aiplatform", "kserve_v2"],
                   vertex_predict_route="/predict", vertex_health_route="/health")
    document = app.test_client().get("/ml/api.json").get_json()
    validate(document)
    assert document["servers"] == [{"url": "/ml"}]
    assert {"/predict", "/health", "/api.json", "/v2/models/{model}/infer"} <= set(
        document["paths"])
    assert not any(path.startswith(("/v1/models", "/grps")) for path in document["paths"])
    assert_same_routes(app, document)


def test_route_equality_names_what_differs(standalone: Flask) -> None:
    document = json.loads(standalone_document())
    del document["paths"]["/v2/health/live"]
    document["paths"]["/v2/nothing"] = {"get": {"responses": {}}}
    with pytest.raises(AssertionError) as failure:
        assert_same_routes(standalone, document)
    assert "registered, not in the document: ['GET /v2/health/live']" in str(failure.value)
    assert "in the document, not registered: ['GET /v2/nothing']" in str(failure.value)


def test_embedded_apps_do_not_serve_it_by_default(app: Flask) -> None:
    assert app.test_client().get("/openapi.json").status_code == 404
    assert "OpenAPI" not in {tag["name"] for tag in build_document(
        app.extensions["predict"].settings)["tags"]}


def test_route_setting_is_a_path(make_app: AppFactory, model_config: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="PREDICT_OPENAPI_ROUTE must be a path"):
        make_app(model_config, openapi_route="openapi.json")
