"""The flask-predict command line: flags, their mapping onto gunicorn and the app's
environment, and the check and demo commands (on models the tests train)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_predict.cli import build_parser, main
from flask_predict.cli.serve import server_command
from tests import models


def command_for(*flags: str, **environ: str) -> tuple[list[str], dict[str, str]]:
    """The gunicorn command and environment ``flask-predict serve FLAGS`` would exec."""
    args = build_parser(environ).parse_args(["serve", *flags])
    return server_command(args, environ)


def option(command: list[str], name: str) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == name]


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


# --- serve: flags -----------------------------------------------------------------------------

def test_console_script_is_installed_and_lists_every_flag_with_defaults() -> None:
    script = shutil.which("flask-predict", path=os.path.dirname(sys.executable))
    assert script is not None
    done = subprocess.run([script, "serve", "--help"], capture_output=True, text=True,
                          env={**os.environ, "PORT": "", "AIP_HTTP_PORT": "",
                               "WEB_CONCURRENCY": ""}, check=True)
    for flag in ("--rest_api_port", "--port", "--grpc_port", "--bind", "--model_name",
                 "--model_base_path", "--model_config_file",
                 "--model_config_file_poll_wait_seconds", "--file_system_poll_wait_seconds",
                 "--tensorflow_session_parallelism", "--tensorflow_intra_op_parallelism",
                 "--tensorflow_inter_op_parallelism", "--workers", "--timeout",
                 "--rest_api_timeout_in_ms", "--log_level"):
        assert flag in done.stdout, flag
    text = " ".join(done.stdout.split())
    assert "else 8501; now 8501" in text and "else 2; now 2" in text


def test_unknown_flags_fail_naming_each(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "serve", "--model_name", "m", "--colour=blue",
                                "--enable_batching", "stray")
    assert status == 2 and out == ""
    assert "unknown flag --colour" in err
    assert "--enable_batching is a tensorflow_model_server flag that flask-predict does " \
           "not support" in err
    assert "unexpected argument 'stray'" in err
    status, _, err = run_main(capsys, "check", "somewhere", "--recursive")
    assert status == 2 and "flask-predict check: error: unknown flag --recursive" in err


def test_a_misspelt_flag_gets_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_main(capsys, "serve", "--model_base_pth", "/srv/models/iris")
    assert status == 2 and ("unknown flag --model_base_pth; did you mean --model_base_path?"
                            in err)
    status, _, err = run_main(capsys, "check", "somewhere", "--jsn")
    assert status == 2 and "unknown flag --jsn; did you mean --json?" in err
    assert len(err.strip().splitlines()) == 1, err


def test_flags_are_not_abbreviated(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_main(capsys, "serve", "--model_n", "m")
    assert status == 2 and "unknown flag --model_n" in err


def test_tf_serving_start_maps_onto_gunicorn_and_the_environment(tmp_path: Path) -> None:
    command, env = command_for("--model_name=iris", f"--model_base_path={tmp_path}",
                               "--rest_api_port=8601", "--port=8600",
                               "--file_system_poll_wait_seconds=5",
                               "--tensorflow_intra_op_parallelism=3",
                               "--tensorflow_inter_op_parallelism=3",
                               "--rest_api_timeout_in_ms=1500",
                               MODEL_NAME="other", FLASK_PREDICT_MODEL_CONFIG_FILE="x.json")
    assert command[:5] == [sys.executable, "-m", "gunicorn", "-c",
                           "python:flask_predict.gunicorn_config"]
    assert command[-1] == "flask_predict.wsgi:app"
    assert option(command, "--bind") == ["0.0.0.0:8601"]
    assert option(command, "--workers") == ["2"] and option(command, "--timeout") == ["2"]
    assert json.loads(env["FLASK_PREDICT_MODELS"]) == {"iris": {"base_path": str(tmp_path)}}
    assert "MODEL_NAME" not in env and "FLASK_PREDICT_MODEL_CONFIG_FILE" not in env
    assert env["FLASK_PREDICT_GRPC_PORT"] == "8600"
    assert env["FLASK_PREDICT_POLL_SECONDS"] == "5.0"
    assert env["FLASK_PREDICT_THREADS"] == "3"


def test_defaults_follow_tf_serving_and_the_environment() -> None:
    command, env = command_for()
    assert option(command, "--bind") == ["0.0.0.0:8501"]  # TF Serving's REST port
    assert "FLASK_PREDICT_GRPC_PORT" not in env and "FLASK_PREDICT_MODELS" not in env
    command, env = command_for(PORT="9000", HOST="127.0.0.1", WEB_CONCURRENCY="3",
                               MODEL_NAME="iris")
    assert option(command, "--bind") == ["127.0.0.1:9000"]
    assert option(command, "--workers") == ["3"]
    assert env["MODEL_NAME"] == "iris"  # no model flag: the environment's models stay
    command, _ = command_for(AIP_HTTP_PORT="8080")
    assert option(command, "--bind") == ["0.0.0.0:8080"]  # Vertex AI's port


def test_model_name_alone_uses_the_container_layout() -> None:
    _, env = command_for("--model_name", "iris", MODEL_BASE_PATH="/srv/models")
    assert json.loads(env["FLASK_PREDICT_MODELS"]) == {
        "iris": {"base_path": "/srv/models/iris"}}
    _, env = command_for("--model_name", "iris")
    assert json.loads(env["FLASK_PREDICT_MODELS"])["iris"]["base_path"] == "/models/iris"


def test_config_file_and_several_binds(tmp_path: Path) -> None:
    command, env = command_for("--model_config_file", "models.config",
                               "--bind", "127.0.0.1:1", "--bind", "[::1]:1", "--workers", "4",
                               "--log_level", "debug")
    assert env["FLASK_PREDICT_MODEL_CONFIG_FILE"] == os.path.abspath("models.config")
    assert option(command, "--bind") == ["127.0.0.1:1", "[::1]:1"]
    assert option(command, "--log-level") == ["debug"] and env["LOG_LEVEL"] == "DEBUG"


@pytest.mark.parametrize("flags, message", [
    (["--model_config_file", "a", "--model_name", "b"], "--model_config_file or --model_name"),
    (["--port", "8501", "--rest_api_port", "8501"], "cannot be the same as --port"),
    (["--bind", "h:1", "--rest_api_port", "2"], "--bind or --rest_api_port"),
    (["--tensorflow_intra_op_parallelism", "2", "--tensorflow_inter_op_parallelism", "4"],
     "one number for the threads"),
    (["--file_system_poll_wait_seconds", "1", "--model_config_file_poll_wait_seconds", "60"],
     "one number for the poll seconds"),
    (["--timeout", "3", "--rest_api_timeout_in_ms", "100"], "--timeout or"),
    (["--workers", "0"], "--workers must be at least 1"),
])
def test_contradictions_fail_clearly(capsys: pytest.CaptureFixture[str], flags: list[str],
                                     message: str) -> None:
    status, _, err = run_main(capsys, "serve", *flags)
    assert status == 2 and message in err and err.startswith("flask-predict serve: error:")


# --- check ------------------------------------------------------------------------------------

def test_check_reports_plugin_loading_and_metadata(
        capsys: pytest.CaptureFixture[str], model_root: Path) -> None:
    status, out, _ = run_main(capsys, "check", str(model_root / "iris"))
    assert status == 0
    assert f"{model_root / 'iris' / '1'}  (model 'iris')\n  plugin:     sklearn " \
           "(flask_predict_sklearn.predictor:SklearnPredictor)\n  loads:      yes" in out
    assert "input   inputs: FP64 [-1, 4]" in out and "output  predict: INT64 [-1]" in out
    assert out.endswith("serve: starts\n")
    status, out, _ = run_main(capsys, "check", str(model_root / "xgb"), "--json")
    report = json.loads(out)
    (found,) = report["versions"]
    assert status == 0 and report["starts"] and report["stop"] is None
    assert found["predictor"] == "xgboost" and found["loaded"] and found["model"] == "xgb"
    assert found["metadata"]["platform"] == "xgboost"
    assert found["metadata"]["signatures"]["serving_default"]["inputs"] == [
        {"name": "inputs", "datatype": "FP32", "shape": [-1, 4]}]


def test_check_custom_routine_with_its_options(capsys: pytest.CaptureFixture[str],
                                               model_root: Path) -> None:
    status, out, _ = run_main(capsys, "check", str(model_root / "echo"),
                              "--option", "class=predictor.EchoPredictor")
    assert status == 0 and "plugin:     custom" in out and "loads:      yes" in out
    status, out, _ = run_main(capsys, "check", str(model_root / "echo"))  # its class found
    assert status == 0 and "plugin:     custom" in out and "loads:      yes" in out
    status, out, _ = run_main(capsys, "check", str(model_root / "echo"), "--option",
                              "class=predictor.Nope")
    assert status == 1 and "loads:      no: TypeError: predictor.Nope cannot be found" in out


def test_check_reads_model_config_files(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        model_config: dict[str, Any]) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"models": model_config}))
    for args in ([str(config)], ["--model_config_file", str(config)]):
        status, out, _ = run_main(capsys, "check", *args, "--json")
        report = json.loads(out)
        assert status == 0 and report["starts"]
        assert {v["model"]: v["predictor"] for v in report["versions"]} == {
            "iris": "sklearn", "xgb": "xgboost", "echo": "custom"}
    status, _, err = run_main(capsys, "check", str(config), "--predictor", "sklearn")
    assert status == 1
    status, _, err = run_main(capsys, "check")
    assert status == 2 and "give PATH or --model_config_file" in err


def test_check_failures(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                        model_root: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "model.joblib").write_bytes(b"not a pickle")
    status, out, _ = run_main(capsys, "check", str(tmp_path))
    assert status == 1 and "loads:      no: unreadable model file: cannot unpickle it" in out
    assert "serve: does not start: " in out
    status, out, _ = run_main(capsys, "check", str(model_root / "iris"), "--predictor", "nope")
    assert status == 1 and "no predictor 'nope'" in out and "installed plugins:" in out
    status, out, _ = run_main(capsys, "check", str(tmp_path / "missing"))
    assert status == 1 and "is not a directory" in out
    # a folder of model files, as Vertex AI and SageMaker hand it, is version 1
    status, out, _ = run_main(capsys, "check", str(model_root / "iris" / "1"))
    assert status == 0 and f"{model_root / 'iris' / '1'}  (model " in out


def test_check_says_every_unreadable_file_alike(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    """One status and one shape for every kind of unreadable model file, as serve says it:
    the model, its file, "unreadable model file" and why."""
    for name, (path, why) in models.make_unreadable(tmp_path).items():
        status, out, _ = run_main(capsys, "check", str(tmp_path / name))
        assert status == 1, (name, out)
        said = (f"serve: does not start: model {name!r} version 1 failed to load from {path}: "
                f"{models.UNREADABLE}")
        assert said in out and why in out.split(said, 1)[1], (name, out)
        assert ".cc:" not in out and "\n" not in out.split(said, 1)[1].rstrip("\n"), out


def test_check_leaves_out_what_the_version_policy_does(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    base = models.train_iris(tmp_path / "iris")
    models.train_iris(base, version=2)
    (base / "1" / "model.joblib").write_bytes(b"broken, but not served")
    status, out, _ = run_main(capsys, "check", str(base))
    assert status == 0 and f"{base / '2'}  (model 'iris')" in out
    assert "model 'iris': versions [1] are on disk, not served by its version policy" in out


# --- demo and the Flask command group ---------------------------------------------------------

def test_demo_writes_a_model_per_installed_framework_and_each_loads(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = run_main(capsys, "demo", str(tmp_path))
    assert status == 0
    config = json.loads((tmp_path / "models.json").read_text())["models"]
    expected = {"iris", "loans", "iris_names", "churn"}
    try:
        import tensorflow  # noqa: F401
        expected.add("half_plus_two")
    except ImportError:
        assert "half_plus_two: skipped (" in out
    assert set(config) == expected
    status, out, _ = run_main(capsys, "check", str(tmp_path / "models.json"), "--json")
    assert status == 0, out
    assert {version["model"] for version in json.loads(out)["versions"]} == set(config)
    # a second run keeps what is there and writes the same config
    run_main(capsys, "demo", str(tmp_path))
    assert json.loads((tmp_path / "models.json").read_text())["models"] == config


def test_flask_command_group(make_app: Any, model_config: dict[str, Any],
                             model_root: Path) -> None:
    app = make_app(model_config)
    runner = app.test_cli_runner()
    listed = runner.invoke(args=["predict", "models"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert any(line.startswith("iris  sklearn  ") and "versions {1: AVAILABLE}" in line
               for line in lines), lines
    assert len(lines) == 3
    checked = runner.invoke(args=["predict", "check", str(model_root / "xgb"), "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["versions"][0]["predictor"] == "xgboost"
    failed = runner.invoke(args=["predict", "check", str(model_root / "echo"), "--option",
                                 "class=predictor.Nope"])
    assert failed.exit_code == 1


def test_an_apps_own_predict_command_wins(make_app: Any) -> None:
    app = Flask("host")

    @app.cli.command("predict")
    def own() -> None:
        print("the host's own")

    app.config["PREDICT_MODELS"] = {}
    app.config["PREDICT_POLL_SECONDS"] = 0
    from flask_predict import FlaskPredict

    FlaskPredict(app)
    assert app.test_cli_runner().invoke(args=["predict"]).output == "the host's own\n"
