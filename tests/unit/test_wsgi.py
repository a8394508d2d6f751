"""flask_predict.wsgi: the deployment app answers what no protocol owns in JSON."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/nothing/here", 404),
    ("POST", "/", 405),
    ("POST", "/openapi.json", 405),
])
def test_the_deployment_app_answers_paths_outside_the_protocols_in_json(
        monkeypatch: pytest.MonkeyPatch, method: str, path: str, status: int) -> None:
    monkeypatch.setenv("FLASK_PREDICT_MODELS", "{}")
    from flask_predict.wsgi import create_app

    answer = create_app().test_client().open(path, method=method)
    assert answer.status_code == status
    assert answer.mimetype == "application/json"
    assert answer.get_json() == {"error": f"{answer.status.split(' ', 1)[1].title()}: "
                                          f"{method} {path}"}
    if status == 405:
        assert "GET" in answer.headers["Allow"]


def test_any_other_http_error_outside_the_protocols_answers_json(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Werkzeug's other errors (a 413, a 500 from an exception) in JSON too, with their
    headers: never its HTML page from the deployment app."""
    monkeypatch.setenv("FLASK_PREDICT_MODELS", "{}")
    from werkzeug.exceptions import RequestEntityTooLarge, TooManyRequests

    from flask_predict.wsgi import create_app

    app = create_app()

    @app.get("/too-large")
    def too_large() -> str:
        raise RequestEntityTooLarge()

    @app.get("/slow-down")
    def slow_down() -> str:
        raise TooManyRequests(retry_after=7)

    @app.get("/boom")
    def boom() -> str:
        raise RuntimeError("a bug")

    client = app.test_client()
    for path, status, name in [("/too-large", 413, "Request Entity Too Large"),
                               ("/slow-down", 429, "Too Many Requests"),
                               ("/boom", 500, "Internal Server Error")]:
        answer = client.get(path)
        assert (answer.status_code, answer.mimetype) == (status, "application/json")
        assert answer.get_json() == {"error": f"{name}: GET {path}"}
    assert client.get("/slow-down").headers["Retry-After"] == "7"
