"""Read by ``gunicorn`` started in this folder; the settings live in
:mod:`flask_predict.gunicorn_config` (``gunicorn -c python:flask_predict.gunicorn_config``
loads them from anywhere)."""

from flask_predict.gunicorn_config import *  # noqa: F401,F403
