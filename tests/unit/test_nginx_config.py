"""deploy/nginx: the template rendered from the environment, and nginx accepting the result."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from flask_predict.settings.config import DEFAULTS
from tests import programs

NGINX_DIR = Path(__file__).resolve().parents[2] / "deploy" / "nginx"
TEMPLATE = (NGINX_DIR / "nginx.conf.template").read_text()


def load_render() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nginx_render", NGINX_DIR / "render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


render = load_render().render


def test_defaults_follow_the_app_and_tf_serving() -> None:
    text = render(TEMPLATE, {})
    assert "listen 0.0.0.0:8501;" in text  # TF Serving's REST port
    assert f"client_max_body_size {DEFAULTS['PREDICT_MAX_REQUEST_BYTES']};" in text
    assert "server unix:/tmp/flask-predict/app.sock;" in text
    assert "proxy_read_timeout 65s;" in text  # gunicorn's 60 s timeout, and a margin
    assert "{{" not in text


def test_the_environment_sets_it() -> None:
    text = render(TEMPLATE, {"PORT": "9000", "AIP_HTTP_PORT": "8080", "HOST": "127.0.0.1",
                             "FLASK_PREDICT_MAX_REQUEST_BYTES": "1000",
                             "PROXY_UPSTREAM": "127.0.0.1:8081", "GUNICORN_TIMEOUT": "120",
                             "PROXY_CLIENT_HEADER_TIMEOUT": "5"})
    assert "listen 127.0.0.1:8080;" in text  # Vertex AI's port wins
    assert "client_max_body_size 1000;" in text
    assert "limit of 1000 bytes" in text
    assert "server 127.0.0.1:8081;" in text
    assert "proxy_read_timeout 125s;" in text
    assert "client_header_timeout 5s;" in text


@pytest.mark.parametrize("environ", [{"PORT": "eighty"}, {"GUNICORN_TIMEOUT": "-1"},
                                     {"FLASK_PREDICT_MAX_REQUEST_BYTES": '"big"'}])
def test_bad_values_stop_the_start(environ: dict[str, str]) -> None:
    with pytest.raises(SystemExit):
        render(TEMPLATE, environ)


def test_an_unknown_placeholder_is_an_error() -> None:
    with pytest.raises(SystemExit, match="NOPE"):
        render(TEMPLATE + "\n# {{NOPE}}\n", {})


@pytest.mark.parametrize("environ", [{}, {"PROXY_UPSTREAM": "127.0.0.1:8081",
                                          "PROXY_WORKER_PROCESSES": "2"}])
def test_nginx_accepts_the_rendered_file(tmp_path: Path, environ: dict[str, str]) -> None:
    nginx = programs.need("nginx", "nginx")
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(TEMPLATE, {"PROXY_RUN_DIR": str(tmp_path), "PORT": "18501",
                                      **environ}))
    result = subprocess.run([nginx, "-t", "-e", "stderr", "-c", str(conf)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
