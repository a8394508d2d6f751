"""One default REST port, TF Serving's 8501, for the gunicorn settings, `flask-predict serve`,
`make serve` and the container (the nginx front and the manifests: test_nginx_config.py,
test_manifests.py; the docs' examples: tests/docs/test_examples.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flask_predict.cli.serve import DEFAULT_REST_PORT

ROOT = Path(__file__).resolve().parents[3]


def test_it_is_tf_serving_s() -> None:
    assert DEFAULT_REST_PORT == 8501


def test_the_gunicorn_settings_bind_it() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "AIP_HTTP_PORT", "HOST")}
    bound = subprocess.run([sys.executable, "-c",
                            "import flask_predict.gunicorn_config as c; print(c.bind)"],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert bound.strip() == "0.0.0.0:8501"


def make_serve(*overrides: str) -> str:
    """The command `make serve` runs (printed, not run)."""
    printed = subprocess.run(["make", "-n", "serve", f"VENV={sys.prefix}", *overrides],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return next(line for line in printed.replace("\\\n", " ").splitlines()
                if "flask-predict serve" in line)


def test_make_serve_uses_it_on_loopback_unless_asked() -> None:
    line = make_serve()
    assert line.startswith("HOST=127.0.0.1 ") and "--rest_api_port 8501" in line
    line = make_serve("HOST=0.0.0.0", "PORT=9000")
    assert line.startswith("HOST=0.0.0.0 ") and "--rest_api_port 9000" in line


def test_the_container_listens_on_it() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "    PORT=8501 \\\n" in dockerfile and "EXPOSE 8501 8500\n" in dockerfile
