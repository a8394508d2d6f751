"""flask_predict.process.url_cache: the deployment app's URL map answers every path as Werkzeug's own
map does, from its cache the second time."""

from __future__ import annotations

from typing import Any

import pytest
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, RequestRedirect, Rule

from flask_predict.process import url_cache
from flask_predict.process.url_cache import MatchCachingMap

RULES = [  # templates: a Rule belongs to one map, so each map gets copies (rules())
    Rule("/v1/models/<model>:predict", methods=["POST"], endpoint="predict"),
    Rule("/v1/models/<model>/versions/<int:version>:predict", methods=["POST"],
         endpoint="predict_version"),
    Rule("/v2/models/<model>/infer", methods=["POST"], endpoint="infer"),
    Rule("/v2/health/ready", methods=["GET"], endpoint="ready"),
    Rule("/v2/repository/", methods=["GET"], endpoint="repository"),
    Rule("/v2/<path:rest>", methods=["GET"], endpoint="unknown"),
]


def rules() -> list[Rule]:
    return [Rule(rule.rule, methods=rule.methods, endpoint=rule.endpoint) for rule in RULES]


CASES = [
    ("/v1/models/lr:predict", "POST"),
    ("/v1/models/lr/versions/7:predict", "POST"),
    ("/v1/models/lr/versions/x:predict", "POST"),  # 404: not an int
    ("/v2/models/m/infer", "POST"),
    ("/v2/models/m/infer", "GET"),  # 405
    ("/v2/health/ready", "GET"),
    ("/v2/repository", "GET"),  # redirect to the slash
    ("/v2/a/b/c", "GET"),
    ("/v2//models//m/infer", "POST"),  # merged slashes: a redirect
    ("/nothing", "GET"),
]


def outcome(url_map: Map, path: str, method: str) -> Any:
    adapter = url_map.bind("example.com", path_info=path, default_method=method)
    try:
        rule, values = adapter.match(return_rule=True)
    except RequestRedirect as exc:
        return ("redirect", exc.new_url)
    except HTTPException as exc:
        return exc.code
    return rule.endpoint, values


def test_every_path_is_answered_as_werkzeugs_own_map_answers_it_twice_over() -> None:
    plain = Map(rules())
    cached = MatchCachingMap(rules())
    for _ in range(2):
        for path, method in CASES:
            assert outcome(cached, path, method) == outcome(plain, path, method), path
    matched = sum(1 for case in CASES if isinstance(outcome(plain, *case), tuple)
                  and outcome(plain, *case)[0] != "redirect")
    assert len(cached.found) == matched, "matches only are kept"


def test_the_arguments_are_each_requests_own() -> None:
    url_map = MatchCachingMap(rules())
    adapter = url_map.bind("example.com", path_info="/v1/models/lr:predict",
                         default_method="POST")
    _, first = adapter.match(return_rule=True)
    assert isinstance(first, dict)
    first["model"] = "changed by a url_value_preprocessor"
    _, second = adapter.match(return_rule=True)
    assert second == {"model": "lr"}


def test_a_rule_added_later_is_matched() -> None:
    url_map = MatchCachingMap(rules())
    assert outcome(url_map, "/v2/special", "GET") == ("unknown", {"rest": "special"})
    url_map.add(Rule("/v2/special", methods=["GET"], endpoint="special"))
    assert outcome(url_map, "/v2/special", "GET") == ("special", {})


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(url_cache, "MAX_ENTRIES", 10)
    url_map = MatchCachingMap(rules())
    for number in range(25):
        assert outcome(url_map, f"/v1/models/m{number}:predict", "POST")[0] == "predict"
        assert len(url_map.found) <= 10


def test_the_deployment_app_matches_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_PREDICT_MODELS", "{}")
    from flask_predict.wsgi import create_app

    app = create_app()
    assert isinstance(app.url_map, MatchCachingMap)
    client = app.test_client()
    for _ in range(2):
        answer = client.post("/v1/models/absent:predict", json={"instances": [[1]]})
        assert answer.status_code == 404
        assert "absent" in answer.get_json()["error"]
    assert any("/v1/models/absent:predict" in key[1] for key in app.url_map.found)


def test_long_paths_are_matched_but_not_kept() -> None:
    url_map = MatchCachingMap(rules())
    rest = "a" * url_cache.MAX_PATH
    for _ in range(2):
        assert outcome(url_map, f"/v2/{rest}", "GET") == ("unknown", {"rest": rest})
    assert not url_map.found
