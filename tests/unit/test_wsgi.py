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
