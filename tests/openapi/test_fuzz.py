"""schemathesis fuzzes the app from its OpenAPI document: no 5xx, and every status, media
type, header and body is one the document gives.

Real models (scikit-learn, XGBoost, a custom predictor); the ``model`` parameter is narrowed
to their names and one unknown name, so requests reach the models. Bounded and
deterministic: a fixed number of derandomized examples per operation and generation mode
(data that fits the document, and data that does not). The document's own examples must
succeed.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, given, settings, strategies
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance,
                                               response_headers_conformance,
                                               response_schema_conformance,
                                               status_code_conformance)

from flask_predict.openapi import standalone_document
from tests.conftest import AppFactory

EXAMPLES = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 10}
"""Generated requests per operation in each mode."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]
MODELS = ["iris", "xgb", "echo", "unknown"]
"""The session's models (tests/conftest.py) and a name no model has."""


def fuzzed_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(standalone_document())
    document["components"]["parameters"]["model"]["schema"]["enum"] = MODELS
    return document


SCHEMA = schemathesis.openapi.from_dict(fuzzed_document())
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
CASES = [(label, mode) for label, operation in sorted(OPERATIONS.items())
         for mode in EXAMPLES
         # a request without parameters or body cannot be made not to fit
         if mode.is_positive or operation.path_parameters or operation.query or
         operation.body]


@pytest.fixture(scope="module")
def fuzzed_app(make_app: AppFactory, model_config: dict[str, Any]) -> Flask:
    iris = {**model_config["iris"], "version_labels": {"stable": 1}}  # the examples' label
    app = make_app({**model_config, "iris": iris}, openapi_route="/openapi.json")
    assert sorted(app.extensions["predict"].service.names()) == sorted(MODELS[:-1])
    return app


def run(strategy: Any, examples: int, test: Callable[[Any], None]) -> None:
    @given(case=strategy)
    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def each(case: Any) -> None:
        test(case)

    each()


@pytest.mark.parametrize(("label", "mode"), CASES, ids=[f"{l} {m}" for l, m in CASES])
def test_app_answers_as_documented(fuzzed_app: Flask, label: str,
                                   mode: GenerationMode) -> None:
    strategy = OPERATIONS[label].as_strategy(generation_mode=mode)
    run(strategy, EXAMPLES[mode], lambda case: case.call_and_validate(checks=CHECKS,
                                                                      app=fuzzed_app))


def has_examples(label: str) -> bool:
    """Whether the document gives an example of every part of the request."""
    operation = OPERATIONS[label]
    bodies = operation.definition.raw.get("requestBody", {}).get("content", {})
    return bool(SCHEMA.get_strategies_from_examples(operation)) and (
        not bodies or "example" in bodies.get("application/json", {}))


WITH_EXAMPLES = sorted(label for label in OPERATIONS if has_examples(label))


@pytest.mark.parametrize("label", WITH_EXAMPLES)
def test_document_examples_succeed(fuzzed_app: Flask, label: str) -> None:
    """Each example request in the document is answered with a success, as documented."""

    def check(case: Any) -> None:
        answer = case.call_and_validate(checks=CHECKS, app=fuzzed_app)
        assert 200 <= answer.status_code < 300, (case.as_curl_command(), answer.text)

    for strategy in SCHEMA.get_strategies_from_examples(OPERATIONS[label]):
        run(strategy, 1, check)


def test_examples_cover_the_predict_routes() -> None:
    assert {"POST /v1/projects/{project}/models/{model}:predict",
            "POST /v1/models/{model}/labels/{label}:predict", "POST /v1/models/{model}:classify",
            "POST /v2/models/{model}/infer", "POST /grps/v1/infer/predict"} <= set(WITH_EXAMPLES)
