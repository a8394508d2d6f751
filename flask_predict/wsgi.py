"""The deployment app: ``gunicorn -c python:flask_predict.gunicorn_config flask_predict.wsgi:app``
(what ``flask-predict serve`` runs).

Settings come from the environment: ``FLASK_PREDICT_*`` variables become ``PREDICT_*``
config keys (values are JSON-decoded), and TF Serving's ``MODEL_NAME``/``MODEL_BASE_PATH``
work as they do in its container.
"""

from __future__ import annotations


from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from .extension import FlaskPredict
from .process import server_settings
from .process.url_cache import MatchCachingMap
from .web.protocol_http import json_response
from .settings.environ import server_config

predict = FlaskPredict()


class ServerApp(Flask):
    """The deployment's Flask app: its URL map remembers the rules it matched
    (:mod:`.url_cache`)."""

    url_map_class = MatchCachingMap


def create_app() -> Flask:
    """A Flask app serving the models the environment configures."""
    app = ServerApp(__name__)
    # the server answers liveness while its models load, readiness once they are in, and
    # serves /openapi.json
    app.config.update(server_config())  # FLASK_PREDICT_MODELS='{...}' -> PREDICT_MODELS
    # runs inside each worker: loads that worker's models, with the settings it read
    predict.init_app(app, server_settings.read_here())
    app.register_error_handler(HTTPException, unknown_route)
    return app


def unknown_route(exc: HTTPException) -> Response:
    """A path no protocol owns, a method a route outside the protocols refuses, or any
    other HTTP error no protocol answered itself (a 413, a 500 outside the protocols): a
    JSON ``{"error": ...}`` (the body AI Platform, TF Serving and V2 share) instead of
    Werkzeug's HTML page, with its status and headers (a 405's ``Allow``). The protocols'
    own errors answer in their own formats, as before."""
    code = exc.code or 500
    answer = json_response({"error": f"{exc.name}: {request.method} {request.path}"}, code)
    for name, value in exc.get_headers():
        if name.lower() != "content-type":
            answer.headers[name] = value
    return answer


app = create_app()
