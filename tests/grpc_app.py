"""An app with its gRPC server started in this process (no gunicorn), for tests that call
both transports."""

from __future__ import annotations

from typing import Any, Iterator

from flask import Flask

from flask_predict import FlaskPredict
from flask_predict.process.worker_hooks import start_grpc, stop_grpc


def serving(model_config: dict[str, Any], **settings: Any) -> Iterator[tuple[Flask, int]]:
    """Yield the app serving *model_config* (keyword arguments become ``PREDICT_*`` keys)
    and its gRPC port on 127.0.0.1; stop the gRPC server after."""
    app = Flask("grpc_app")
    app.config.update({"PREDICT_MODELS": model_config, "PREDICT_POLL_SECONDS": 0,
                       "PREDICT_GRPC_PORT": 0, "PREDICT_GRPC_HOST": "127.0.0.1",
                       **{f"PREDICT_{k.upper()}": v for k, v in settings.items()}})
    FlaskPredict(app)
    server = start_grpc(app)
    try:
        yield app, server.port
    finally:
        stop_grpc(app, grace=0)
