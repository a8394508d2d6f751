from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import AppFactory

from .models import train_all


@pytest.fixture(scope="session")
def mlflow_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    pytest.importorskip("mlflow", reason="mlflow-skinny (requirements-test.txt) saves them")
    return train_all(tmp_path_factory.mktemp("mlflow"))


@pytest.fixture(scope="session")
def mlflow_app(make_app: AppFactory, mlflow_models: dict[str, dict[str, str]]) -> Flask:
    """Every model; /invocations answers iris unless a request names another."""
    return make_app(mlflow_models, mlflow_model="iris")


@pytest.fixture()
def mlflow_client(mlflow_app: Flask) -> FlaskClient:
    return mlflow_app.test_client()


def single_app(make_app: AppFactory, models: dict[str, dict[str, str]], name: str,
               **settings: object) -> Flask:
    """An app serving only model *name*."""
    return make_app({name: models[name]}, **settings)


@pytest.fixture(scope="session")
def iris_base(mlflow_models: dict[str, dict[str, str]]) -> Path:
    return Path(mlflow_models["iris"]["base_path"])
