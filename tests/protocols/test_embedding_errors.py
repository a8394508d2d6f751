"""An app that embeds the extension keeps its own HTTP errors: its auth, rate limiter and
maintenance switch ``abort()`` in ``before_request`` on the extension's routes, and its own
error handlers answer, untouched. Only the extension's own errors take each protocol's
format."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask, abort, jsonify, request
from flask.testing import FlaskClient
from werkzeug.exceptions import HTTPException

from flask_predict import FlaskPredict

ROWS = [[5.1, 3.5, 1.4, 0.2]]
ROUTES = [
    ("POST", "/v1/models/iris:predict", {"instances": ROWS}),
    ("GET", "/v1/models/iris/metadata", None),
    ("POST", "/v1/projects/p/models/iris:predict", {"instances": ROWS}),
    ("POST", "/v2/models/iris/infer",
     {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, 4], "data": ROWS[0]}]}),
    ("GET", "/v2/health/ready", None),
    ("POST", "/grps/v1/infer/predict", {"model": "iris", "ndarray": ROWS}),
    ("GET", "/grps/v1/health/live", None),
]
GOOD = {"Authorization": "Bearer good"}


def host_app(models: dict[str, Any], handlers: bool = True) -> Flask:
    """A host app with bearer auth, roles, a rate limiter, a maintenance switch and, with
    *handlers*, its own JSON error handlers."""
    app = Flask("host")
    app.config.update(PREDICT_MODELS=models, PREDICT_POLL_SECONDS=0, MAINTENANCE=False)

    @app.before_request
    def guard() -> None:
        if app.config["MAINTENANCE"]:
            abort(503)
        if request.headers.get("Authorization") != "Bearer good":
            abort(401)
        if request.headers.get("X-Role") == "guest":
            abort(403)
        if request.headers.get("X-Burst"):
            abort(429)

    if handlers:
        @app.errorhandler(HTTPException)
        def host_error(exc: HTTPException) -> Any:
            return jsonify(host_error=exc.code, name=exc.name), exc.code

        @app.errorhandler(429)
        def slow_down(exc: HTTPException) -> Any:
            return jsonify(host_error=429, retry=True), 429, {"Retry-After": "7"}

    FlaskPredict(app)
    return app


@pytest.fixture(scope="module")
def host(model_config: dict[str, Any]) -> Flask:
    return host_app(model_config)


def call(client: FlaskClient, method: str, path: str, body: Any, **headers: str) -> Any:
    return client.open(path, method=method, json=body, headers=headers)


@pytest.mark.parametrize("method, path, body", ROUTES)
def test_the_host_apps_errors_and_handlers_pass_through(host: Flask, method: str, path: str,
                                                         body: Any) -> None:
    client = host.test_client()
    assert call(client, method, path, body, **GOOD).status_code == 200
    unauthorized = call(client, method, path, body)
    assert unauthorized.status_code == 401
    assert unauthorized.get_json() == {"host_error": 401, "name": "Unauthorized"}
    forbidden = call(client, method, path, body, **GOOD, **{"X-Role": "guest"})
    assert forbidden.status_code == 403
    assert forbidden.get_json() == {"host_error": 403, "name": "Forbidden"}
    limited = call(client, method, path, body, **GOOD, **{"X-Burst": "1"})
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "7"
    assert limited.get_json() == {"host_error": 429, "retry": True}
    host.config["MAINTENANCE"] = True
    try:
        down = call(client, method, path, body, **GOOD)
    finally:
        host.config["MAINTENANCE"] = False
    assert down.status_code == 503
    assert down.get_json() == {"host_error": 503, "name": "Service Unavailable"}


@pytest.mark.parametrize("method, path, body", ROUTES)
def test_without_host_handlers_werkzeug_answers(model_config: dict[str, Any], method: str,
                                                path: str, body: Any) -> None:
    client = host_app(model_config, handlers=False).test_client()
    got = call(client, method, path, body)
    assert got.status_code == 401
    assert b"Unauthorized" in got.data


@pytest.mark.parametrize("path, body, status, answer", [
    ("/v1/models/nope:predict", {"instances": ROWS}, 404,
     {"error": "Servable not found for request: Latest(nope)"}),
    ("/v2/models/nope/infer", {"inputs": []}, 404, None),
    ("/grps/v1/infer/predict", {"model": "nope", "str_data": "x"}, 404,
     {"status": {"code": 404, "msg": "Model nope not found.", "status": "FAILURE"}}),
    ("/v1/models/iris:predict", {"instances": [["a", 1, 2, 3]]}, 400, None),
])
def test_the_extensions_own_errors_keep_the_protocols_format(host: Flask, path: str,
                                                             body: Any, status: int,
                                                             answer: Any) -> None:
    got = host.test_client().post(path, json=body, headers=GOOD)
    assert got.status_code == status
    assert "host_error" not in got.get_json()
    if answer is not None:
        assert got.get_json() == answer
