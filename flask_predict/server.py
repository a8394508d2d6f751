"""What ``gunicorn.conf.py`` delegates to: checks in the master, per-worker setup."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Config, Flask

from .config import config_from_environ, read_settings
from .errors import ConfigError
from .extension import close_app
from .plugins import installed_names
from .repository import version_folders
from .shared_state import create_server_dir

WORKER_INDEX_VARIABLE = "FLASK_PREDICT_WORKER_INDEX"
STATE_DIR_VARIABLE = "FLASK_PREDICT_STATE_DIR"


def share_cores(workers: int) -> None:
    """Tell each worker how many siblings it has, so its thread pools default to its share
    of the cores (``PREDICT_WORKERS``; an explicit ``FLASK_PREDICT_THREADS`` wins)."""
    os.environ.setdefault("FLASK_PREDICT_WORKERS", str(workers))


def share_state_dir() -> str:
    """Give every worker of this server one folder for shared state (grps online/offline,
    metrics; see :mod:`flask_predict.shared_state`), unless ``FLASK_PREDICT_STATE_DIR`` is
    set already. Called in the master; the folder is removed when the master exits."""
    if not os.environ.get(STATE_DIR_VARIABLE):
        os.environ[STATE_DIR_VARIABLE] = create_server_dir()
    return os.environ[STATE_DIR_VARIABLE]


def environ_config() -> Config:
    """The config a deployment's ``create_app`` builds from the environment."""
    config = Config(os.getcwd())
    config.update(config_from_environ(os.environ))
    config.from_prefixed_env()
    return config


def check_configuration(log: Any) -> None:
    """Validate settings and model folders in the master, without loading any framework.

    Raises ``SystemExit`` with the problem, which stops gunicorn before it forks workers.
    """
    try:
        settings = read_settings(environ_config())
        plugins = installed_names()
        for spec in settings.models:
            if spec.predictor is not None and spec.predictor not in plugins:
                raise ConfigError(f"model {spec.name!r}: no predictor {spec.predictor!r}; "
                                  f"installed: {plugins}")
            if not version_folders(spec.base_path):
                raise ConfigError(f"model {spec.name!r}: no numbered version folder in "
                                  f"{spec.base_path!r}")
        if not settings.models:
            log.warning("flask_predict: no model configured (set FLASK_PREDICT_MODELS, "
                        "FLASK_PREDICT_MODEL_CONFIG_FILE or MODEL_NAME)")
    except ConfigError as exc:
        log.error("flask_predict: configuration error: %s", exc.message)
        raise SystemExit(f"flask_predict: configuration error: {exc.message}")


def worker_started(age: int, workers: int) -> None:
    """Give the new worker an index in ``0..workers-1`` (used to spread workers over GPUs)."""
    os.environ[WORKER_INDEX_VARIABLE] = str((age - 1) % max(workers, 1))


def route_logs(target: logging.Logger, level: str) -> None:
    """Send the ``flask_predict`` logger's records to *target*'s handlers (gunicorn's error
    log) at *level*."""
    source = logging.getLogger("flask_predict")
    source.handlers = list(target.handlers)
    source.setLevel(level.upper())
    source.propagate = False


def close_worker(app: Flask) -> None:
    """Release the worker's models."""
    logging.getLogger(__name__).info("flask_predict: worker %s releasing its models",
                                     os.getpid())
    close_app(app)
