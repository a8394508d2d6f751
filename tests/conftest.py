"""Shared fixtures: real models trained once per session, apps and clients."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict
from tests import models, programs
from tests.keras_models import keras_models  # noqa: F401  (a session fixture)
from tests.tf_models import tfserving_models  # noqa: F401  (a session fixture)

ARTIFACTS = Path(os.environ.get("FLASK_PREDICT_TEST_ARTIFACTS")
                 or Path(__file__).resolve().parents[1] / "test-artifacts")
"""Where tests leave files for people to look at (the status page's screenshot)."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if ARTIFACTS.is_dir() and any(ARTIFACTS.iterdir()):
        terminalreporter.write_line(f"test artifacts: {ARTIFACTS}")


@pytest.fixture(scope="session")
def nginx() -> str:
    """Debian's nginx (the front of deploy/nginx), else the test skips saying so."""
    return programs.need("nginx", "nginx")


@pytest.fixture(scope="session")
def wrk() -> str:
    """Debian's wrk (the benchmarks' load generator), else the test skips saying so."""
    return programs.need("wrk", "wrk")


@pytest.fixture(scope="session")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sklearn iris, an XGBoost model trained with missing values, a custom predictor."""
    root = tmp_path_factory.mktemp("models")
    models.train_iris(root / "iris")
    models.train_xgboost_missing(root / "xgb")
    models.make_custom(root / "echo")
    return root


@pytest.fixture(scope="session")
def model_config(model_root: Path) -> dict[str, dict[str, object]]:
    return models.model_config(model_root)


AppFactory = Callable[..., Flask]


@pytest.fixture(scope="session")
def make_app() -> AppFactory:
    """Build a Flask app with flask-predict; keyword arguments become ``PREDICT_*`` keys."""

    def build(models: Any, **settings: Any) -> Flask:
        app = Flask("test_app")
        app.config["PREDICT_MODELS"] = models
        app.config["PREDICT_POLL_SECONDS"] = 0
        for key, value in settings.items():
            app.config[f"PREDICT_{key.upper()}"] = value
        FlaskPredict(app)
        return app

    return build


@pytest.fixture(scope="session")
def app(make_app: AppFactory, model_config: dict[str, Any]) -> Flask:
    """One app over the three session models, every protocol on."""
    return make_app(model_config)


@pytest.fixture()
def client(app: Flask) -> FlaskClient:
    return app.test_client()
