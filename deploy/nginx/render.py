"""Print nginx.conf.template with its placeholders (``{{PORT}}``...) filled in from the
environment.

    python render.py nginx.conf.template > "$PROXY_RUN_DIR/nginx.conf"

The body limit is the app's own ``FLASK_PREDICT_MAX_REQUEST_BYTES`` (flask_predict's default
when unset), and nginx waits for an answer a little longer than gunicorn's worker timeout
(``GUNICORN_TIMEOUT``), so both sides agree without being told twice. Variables and defaults
are listed in docs/deployment.md.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Mapping

from flask_predict.cli.serve import DEFAULT_REST_PORT
from flask_predict.settings.config import DEFAULTS


def values(environ: Mapping[str, str]) -> dict[str, str]:
    """Each template name -> its value, validated."""
    run_dir = environ.get("PROXY_RUN_DIR", "/tmp/flask-predict")
    max_bytes = json.loads(environ.get("FLASK_PREDICT_MAX_REQUEST_BYTES", "null"))
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, type(None))):
        sys.exit(f"FLASK_PREDICT_MAX_REQUEST_BYTES must be a number of bytes, got {max_bytes!r}")
    worker_timeout = _number(environ, "GUNICORN_TIMEOUT", 60)
    return {
        # Started as root, nginx runs its workers as PROXY_USER (else its built-in default,
        # nobody): they must reach the socket. Otherwise they keep the user nginx has.
        "USER": (f"user {environ['PROXY_USER']};"
                 if os.geteuid() == 0 and environ.get("PROXY_USER") else "# user: unchanged"),
        "HOST": environ.get("HOST", "0.0.0.0"),
        "PORT": str(_number({"PORT": environ.get("AIP_HTTP_PORT") or environ.get("PORT", "")},
                            "PORT", DEFAULT_REST_PORT)),
        "UPSTREAM": environ.get("PROXY_UPSTREAM", f"unix:{run_dir}/app.sock"),
        "RUN_DIR": run_dir,
        "MAX_REQUEST_BYTES": str(max_bytes or DEFAULTS["PREDICT_MAX_REQUEST_BYTES"]),
        "PROXY_READ_TIMEOUT": str(worker_timeout + 5 if worker_timeout else 3600),
        "CLIENT_HEADER_TIMEOUT": str(_number(environ, "PROXY_CLIENT_HEADER_TIMEOUT", 10)),
        "CLIENT_BODY_TIMEOUT": str(_number(environ, "PROXY_CLIENT_BODY_TIMEOUT", 30)),
        "SEND_TIMEOUT": str(_number(environ, "PROXY_SEND_TIMEOUT", 30)),
        "KEEPALIVE_TIMEOUT": str(_number(environ, "PROXY_KEEPALIVE_TIMEOUT", 75)),
        "WORKER_PROCESSES": str(_number(environ, "PROXY_WORKER_PROCESSES", 1)),
        "WORKER_CONNECTIONS": str(_number(environ, "PROXY_WORKER_CONNECTIONS", 4096)),
    }


def render(template: str, environ: Mapping[str, str]) -> str:
    """*template* with its ``{{NAME}}`` placeholders replaced; an unknown name is an error."""
    known = values(environ)

    def replace(match: re.Match[str]) -> str:
        if match[1] not in known:
            sys.exit(f"nginx template: unknown placeholder {match[0]}")
        return known[match[1]]

    return re.sub(r"\{\{(\w+)\}\}", replace, template)


def _number(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name) or str(default)
    if not text.isdigit():
        sys.exit(f"{name} must be a whole number, got {text!r}")
    return int(text)


if __name__ == "__main__":
    template = Path(sys.argv[1] if len(sys.argv) > 1 else
                    Path(__file__).with_name("nginx.conf.template"))
    sys.stdout.write(render(template.read_text(), os.environ))
