"""The standalone server's settings, read from the environment as its app reads them:
the standalone defaults, TF Serving's and Vertex AI's container variables, then every
``FLASK_PREDICT_*`` variable (what gunicorn's master checks before any worker starts)."""

from __future__ import annotations

import os

from flask import Config

from ..settings.config import STANDALONE_DEFAULTS, config_from_environ


def environ_config() -> Config:
    """The config a deployment's ``create_app`` builds from the environment."""
    config = Config(os.getcwd())
    config.update(STANDALONE_DEFAULTS)
    config.update(config_from_environ(os.environ))
    config.from_prefixed_env()
    return config
