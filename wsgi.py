"""``gunicorn wsgi:app`` from this folder; the app lives in :mod:`flask_predict.wsgi`."""

from flask_predict.wsgi import app, create_app  # noqa: F401
