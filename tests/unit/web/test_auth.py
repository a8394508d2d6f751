"""Authentication: tokens on every protocol's routes, and the admin routes' default."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from flask_predict.request import tokens
from flask_predict.errors import ConfigError
from tests.conftest import AppFactory

TOKEN = "client-token-0123456789"
OTHER = "second-token-0123456789"
ADMIN = "admin-token-0123456789ab"
ROW = [5.1, 3.5, 1.4, 0.2]
PREDICTS = {
    "aiplatform": ("/v1/projects/p/models/iris:predict", {"instances": [ROW]}),
    "tfserving": ("/v1/models/iris:predict", {"instances": [ROW]}),
    "kserve_v2": ("/v2/models/iris/infer", {"inputs": [
        {"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}),
    "grps": ("/grps/v1/infer/predict", {"model": "iris", "ndarray": [ROW]}),
}


@pytest.fixture(scope="module")
def guarded(make_app: AppFactory, model_config: dict[str, Any],
            tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    token_file = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    token_file.write_text(f"# the second client\n{OTHER}\n\n")
    return make_app({"iris": model_config["iris"]}, auth_tokens=TOKEN,
                    auth_tokens_file=str(token_file), metrics_path="/metrics",
                    status_path="/status").test_client()


def error_message(protocol: str, body: Any) -> str:
    """The message of each protocol's own error body."""
    if protocol == "grps":
        assert body["status"]["status"] == "FAILURE" and body["status"]["code"] == 401
        return str(body["status"]["msg"])
    return str(body["error"])


@pytest.mark.parametrize("protocol", sorted(PREDICTS))
def test_every_protocol_refuses_a_request_without_a_valid_token(
        guarded: FlaskClient, protocol: str) -> None:
    path, body = PREDICTS[protocol]
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"X-API-Key": TOKEN + "x"}, {"Authorization": f"Token {TOKEN}"}):
        got = guarded.post(path, json=body, headers=headers)
        assert got.status_code == 401, (headers, got.data)
        assert got.headers["WWW-Authenticate"] == 'Bearer realm="flask-predict"'
        assert "token" in error_message(protocol, got.get_json())
        assert got.headers["X-Request-ID"]


@pytest.mark.parametrize("protocol", sorted(PREDICTS))
def test_every_protocol_accepts_each_way_of_sending_a_token(
        guarded: FlaskClient, protocol: str) -> None:
    path, body = PREDICTS[protocol]
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    for headers in ({"Authorization": f"Bearer {TOKEN}"}, {"authorization": f"bearer {OTHER}"},
                    {"X-API-Key": TOKEN}, {"Authorization": f"Basic {basic}"}):
        got = guarded.post(path, json=body, headers=headers)
        assert got.status_code == 200, (headers, got.data)


def test_health_probes_stay_open(guarded: FlaskClient) -> None:
    for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/iris/ready",
                 "/grps/v1/health/live", "/grps/v1/health/ready"):
        assert guarded.get(path).status_code == 200, path
    assert guarded.get("/v2/models/iris").status_code == 401  # metadata is not a probe
    assert guarded.get("/v1/models/iris").status_code == 401


def test_metrics_and_status_page_need_the_token_too(guarded: FlaskClient) -> None:
    got = guarded.get("/metrics")
    assert got.status_code == 401 and got.headers["WWW-Authenticate"].startswith("Bearer")
    assert guarded.get("/metrics", headers={"X-API-Key": TOKEN}).status_code == 200
    page = guarded.get("/status/")
    assert page.status_code == 401
    assert page.headers["WWW-Authenticate"].startswith("Basic")  # the browser asks for it
    basic = base64.b64encode(f"me:{TOKEN}".encode()).decode()
    assert guarded.get("/status/", headers={"Authorization": f"Basic {basic}"}
                       ).status_code == 200


def test_tokens_must_be_long_enough(make_app: AppFactory, model_config: dict[str, Any],
                                    tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        make_app({"iris": model_config["iris"]}, auth_tokens="short")
    with pytest.raises(ConfigError, match="cannot read"):
        make_app({"iris": model_config["iris"]}, auth_tokens_file=str(tmp_path / "missing"))


def test_token_matching() -> None:
    assert tokens.token_matches(TOKEN, (OTHER, TOKEN))
    assert not tokens.token_matches(TOKEN[:-1], (TOKEN,))
    assert not tokens.token_matches(None, (TOKEN,))
    assert not tokens.token_matches("", ())
    assert tokens.presented_token({"HTTP_AUTHORIZATION": "Basic !!notbase64"}) is None


# --- routes that change state -----------------------------------------------------------------

def admin_client(make_app: AppFactory, model_config: dict[str, Any],
                 **settings: Any) -> FlaskClient:
    return make_app({"iris": model_config["iris"]}, **settings).test_client()


REMOTE = {"REMOTE_ADDR": "10.1.2.3"}


def test_admin_routes_default_to_loopback_only(make_app: AppFactory,
                                               model_config: dict[str, Any]) -> None:
    client = admin_client(make_app, model_config)
    assert client.get("/grps/v1/health/offline").status_code == 200  # 127.0.0.1
    for route in ("offline", "online"):
        got = client.get(f"/grps/v1/health/{route}", environ_base=REMOTE)
        assert got.status_code == 403
        assert got.get_json()["status"]["code"] == 403
        assert "PREDICT_ADMIN_TOKENS" in got.get_json()["status"]["msg"]
    # a local proxy forwarding someone else's request is not a loopback client
    got = client.get("/grps/v1/health/online", headers={"X-Forwarded-For": "203.0.113.9"})
    assert got.status_code == 403
    assert client.get("/grps/v1/health/ready").status_code == 503  # still offline
    assert client.post("/grps/v1/infer/predict", json=PREDICTS["grps"][1],
                       environ_base=REMOTE).status_code == 200  # predicting is not admin


def test_admin_token_lets_remote_callers_in(make_app: AppFactory,
                                            model_config: dict[str, Any]) -> None:
    client = admin_client(make_app, model_config, admin_tokens=[ADMIN])
    got = client.get("/grps/v1/health/offline", environ_base=REMOTE)
    assert got.status_code == 401 and got.headers["WWW-Authenticate"].startswith("Bearer")
    got = client.get("/grps/v1/health/offline", environ_base=REMOTE,
                     headers={"Authorization": f"Bearer {ADMIN}"})
    assert got.status_code == 200
    assert client.get("/grps/v1/health/ready").status_code == 503


def test_loopback_can_be_refused_and_client_tokens_are_not_admin_tokens(
        make_app: AppFactory, model_config: dict[str, Any]) -> None:
    client = admin_client(make_app, model_config, admin_loopback=False, auth_tokens=[TOKEN],
                          admin_tokens=[ADMIN])
    with_client_token = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/grps/v1/health/offline", headers=with_client_token).status_code == 401
    got = client.get("/grps/v1/health/offline", headers={"X-API-Key": ADMIN})
    assert got.status_code == 200  # an admin token also passes the client check
    no_admin = admin_client(make_app, model_config, admin_loopback="false")
    assert no_admin.get("/grps/v1/health/offline").status_code == 403


def test_an_embedding_apps_own_check_on_the_blueprints(make_app: AppFactory,
                                                       model_config: dict[str, Any]) -> None:
    """What docs/security.md shows: the host's hook refuses, its own error answer goes out."""
    from flask import abort, request

    app = make_app({"iris": model_config["iris"]})

    def require_login() -> None:
        if request.headers.get("Authorization") != "Session ok":
            abort(401)

    for name in ("predict_aiplatform", "predict_tfserving", "predict_kserve_v2",
                 "predict_grps"):
        app.before_request_funcs.setdefault(name, []).append(require_login)
    client = app.test_client()
    for path, body in PREDICTS.values():
        refused = client.post(path, json=body)
        assert refused.status_code == 401 and refused.headers["X-Request-ID"]
        assert client.post(path, json=body, headers={"Authorization": "Session ok"}
                           ).status_code == 200
