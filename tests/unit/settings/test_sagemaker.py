"""SageMaker's container variables as the server's (flask_predict.settings.sagemaker), and
what the MLflow routes read of SageMaker's headers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flask_predict.errors import ConfigError
from flask_predict.protocols.mlflow.sagemaker import target_names, wants_csv
from flask_predict.settings.sagemaker import exports, serve_environ


def test_nothing_set_is_port_8080_and_the_model_in_opt_ml_model() -> None:
    assert serve_environ({}) == {
        "PORT": "8080",
        "FLASK_PREDICT_MODELS": json.dumps({"model": {"base_path": "/opt/ml/model"}})}


def test_sagemakers_variables_become_the_servers() -> None:
    env = serve_environ({"SAGEMAKER_BIND_TO_PORT": "9090",
                         "SAGEMAKER_MODEL_SERVER_WORKERS": "4",
                         "SAGEMAKER_MODEL_SERVER_TIMEOUT": "120",
                         "SM_MODEL_DIR": "/data/model", "MODEL_NAME": "churn"})
    assert env == {"PORT": "9090", "WEB_CONCURRENCY": "4",
                   "FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS": "4",
                   "GUNICORN_TIMEOUT": "120",
                   "FLASK_PREDICT_MODELS": json.dumps({"churn": {"base_path": "/data/model"}})}


def test_a_model_config_wins_over_opt_ml_model() -> None:
    for source in ("FLASK_PREDICT_MODELS", "FLASK_PREDICT_MODEL_CONFIG_FILE",
                   "MODEL_CONFIG_FILE"):
        assert "FLASK_PREDICT_MODELS" not in serve_environ({source: "x"})


def test_the_worker_count_in_force_is_the_concurrency_reported() -> None:
    assert serve_environ({"WEB_CONCURRENCY": "3"})[
        "FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS"] == "3"
    assert "FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS" not in serve_environ({
        "WEB_CONCURRENCY": "3", "FLASK_PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS": "8"})


@pytest.mark.parametrize("variable, value", [
    ("SAGEMAKER_BIND_TO_PORT", "eighty"), ("SAGEMAKER_BIND_TO_PORT", "70000"),
    ("SAGEMAKER_MODEL_SERVER_WORKERS", "0"), ("SAGEMAKER_MODEL_SERVER_TIMEOUT", "-1"),
    ("SAGEMAKER_MODEL_SERVER_WORKERS", "2.5")])
def test_a_bad_value_names_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable} must be a whole number"):
        serve_environ({variable: value})


def test_the_exports_are_shell_quoted_and_a_bad_value_exits_2() -> None:
    text = exports({"SM_MODEL_DIR": "/it's here"})
    assert "export FLASK_PREDICT_MODELS='{\"model\": {\"base_path\": \"/it'\"'\"'s here\"}}'" \
        in text.splitlines()
    shell = subprocess.run(["bash", "-c", f"{text}\necho \"$FLASK_PREDICT_MODELS\""],
                           capture_output=True, text=True, check=True)
    assert json.loads(shell.stdout)["model"]["base_path"] == "/it's here"
    run = subprocess.run([sys.executable, "-m", "flask_predict.settings.sagemaker"],
                         env={**os.environ, "SAGEMAKER_BIND_TO_PORT": "x"},
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == ("serve: SAGEMAKER_BIND_TO_PORT must be a whole number (1 to "
                          "65535), got 'x'\n")


def test_target_model_names() -> None:
    assert target_names("iris") == ["iris"]
    assert target_names("iris.tar.gz") == ["iris.tar.gz", "iris"]
    assert target_names("a/b/iris.tgz") == ["a/b/iris.tgz", "iris"]


@pytest.mark.parametrize("accept, csv", [
    (None, False), ("", False), ("text/csv", True), ("text/csv; q=0.9", True),
    ("application/json", False), ("application/json, text/csv", False),
    ("text/csv, application/json", True), ("*/*", False), ("text/html", False)])
def test_accept(accept: str | None, csv: bool) -> None:
    assert wants_csv(accept) is csv


def test_a_multi_model_endpoint_serves_the_models_folder() -> None:
    env = serve_environ({"SAGEMAKER_MULTI_MODEL": "true"})
    assert env["FLASK_PREDICT_MLFLOW_MULTI_MODEL"] == "true"
    assert env["FLASK_PREDICT_LAZY_ROOT"] == "/opt/ml/models"
    assert "FLASK_PREDICT_MODELS" not in env
    assert serve_environ({"SAGEMAKER_MULTI_MODEL": "false"})["FLASK_PREDICT_MODELS"]


def test_multi_model_needs_a_lazy_root() -> None:
    from flask_predict.settings.app import read_settings

    with pytest.raises(ConfigError, match="PREDICT_LAZY_ROOT"):
        read_settings({"PREDICT_MLFLOW_MULTI_MODEL": True})
