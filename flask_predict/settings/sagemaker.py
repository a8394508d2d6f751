"""SageMaker's container contract, read from its environment: what ``docker run IMAGE
serve`` (the container's entry point, ``deploy/container/start``) sets before it starts the
server, as the variables every way of starting already reads.

* ``SAGEMAKER_BIND_TO_PORT`` (default 8080) is the port nginx listens on (``PORT``);
* ``SAGEMAKER_MODEL_SERVER_WORKERS`` is gunicorn's worker count (``WEB_CONCURRENCY``), and
  what ``/execution-parameters`` reports as ``MaxConcurrentTransforms``;
* ``SAGEMAKER_MODEL_SERVER_TIMEOUT`` is the worker timeout (``GUNICORN_TIMEOUT``, seconds);
* the model is the folder SageMaker unpacks it into, ``/opt/ml/model`` (``SM_MODEL_DIR``),
  named ``$MODEL_NAME`` (default ``model``), unless a model config is set;
* ``SAGEMAKER_MULTI_MODEL=true`` (a multi-model endpoint) serves SageMaker's multi-model API
  over a lazy tier whose root is ``/opt/ml/models``, where SageMaker puts each model it
  loads, instead of ``/opt/ml/model``.

https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html
No Flask here.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Mapping

from ..errors import ConfigError

MODEL_DIR = "/opt/ml/model"
MODELS_DIR = "/opt/ml/models"
"""Where SageMaker puts the models of a multi-model endpoint, one folder each."""
DEFAULT_PORT = 8080

MODEL_SOURCES = ("FLASK_PREDICT_MODELS", "FLASK_PREDICT_MODEL_CONFIG_FILE", "MODEL_CONFIG_FILE")
"""Settings that name the models themselves: with one of them, ``/opt/ml/model`` is unused."""


def serve_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables SageMaker's ``serve`` sets for the server, from *environ*."""
    port = _whole(environ, "SAGEMAKER_BIND_TO_PORT", str(DEFAULT_PORT), 1, 65535)
    env = {"PORT": port}
    workers = environ.get("SAGEMAKER_MODEL_SERVER_WORKERS")
    if workers:
        env["WEB_CONCURRENCY"] = _whole(environ, "SAGEMAKER_MODEL_SERVER_WORKERS", "", 1)
    concurrency = env.get("WEB_CONCURRENCY") or environ.get("WEB_CONCURRENCY")
    if concurrency and concurrency.isdigit() and not environ.get(
            "FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS"):
        env["FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS"] = concurrency
    if environ.get("SAGEMAKER_MODEL_SERVER_TIMEOUT"):
        env["GUNICORN_TIMEOUT"] = _whole(environ, "SAGEMAKER_MODEL_SERVER_TIMEOUT", "", 1)
    if (environ.get("SAGEMAKER_MULTI_MODEL") or "").strip().lower() == "true":
        env["FLASK_PREDICT_MLFLOW_MULTI_MODEL"] = "true"
        env["FLASK_PREDICT_LAZY_ROOT"] = environ.get("FLASK_PREDICT_LAZY_ROOT") or MODELS_DIR
    elif not any(environ.get(name) for name in MODEL_SOURCES):
        folder = environ.get("SM_MODEL_DIR") or MODEL_DIR
        name = environ.get("MODEL_NAME") or "model"
        env["FLASK_PREDICT_MODELS"] = json.dumps({name: {"base_path": folder}})
    return env


def _whole(environ: Mapping[str, str], variable: str, default: str, minimum: int,
           maximum: int | None = None) -> str:
    text = (environ.get(variable) or default).strip()
    if not text.isdigit() or int(text) < minimum or (maximum and int(text) > maximum):
        bound = f"{minimum} to {maximum}" if maximum else f"at least {minimum}"
        raise ConfigError(f"{variable} must be a whole number ({bound}), got {text!r}")
    return str(int(text))


def exports(environ: Mapping[str, str]) -> str:
    """:func:`serve_environ` as the shell lines the entry point evaluates."""
    return "".join(f"export {name}={shlex.quote(value)}\n"
                   for name, value in serve_environ(environ).items())


def main() -> int:
    try:
        sys.stdout.write(exports(os.environ))
    except ConfigError as exc:
        sys.stderr.write(f"serve: {exc.message}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
