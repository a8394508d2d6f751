"""``flask-predict serve`` from this environment, started outside the checkout the way a TF
Serving user would start tensorflow_model_server, and stopped by the master's config check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server import CliServer, request, worker_pids

pytestmark = pytest.mark.e2e


def flask_predict() -> str:
    script = shutil.which("flask-predict", path=os.path.dirname(sys.executable))
    assert script is not None, "flask-predict is not installed in this environment"
    return script


def test_tf_serving_style_start(model_root: Path, tmp_path: Path) -> None:
    flags = ["--model_name", "iris", "--model_base_path", str(model_root / "iris"),
             "--file_system_poll_wait_seconds", "0", "--rest_api_port", "{port}"]
    # ready once every worker has loaded its models (V2's server-wide readiness)
    with CliServer(flask_predict(), flags, tmp_path, log_path=tmp_path / "log",
                   env={"HOST": "127.0.0.1"}) as server:
        status, _, body = request("GET", server.url + "/v1/models/iris")
        assert status == 200
        assert json.loads(body)["model_version_status"][0]["state"] == "AVAILABLE"
        status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                                  body={"instances": [[5.1, 3.5, 1.4, 0.2]]})
        assert status == 200 and json.loads(body)["predictions"][0]["predict"] == 0
        log = server.log_text()
    assert "Listening at: http://127.0.0.1:" in log
    assert "Using worker: flask_predict.process.sync_worker.SyncWorker" in log


def test_config_file_start_runs_the_packaged_settings(
        model_config: dict[str, dict[str, object]], tmp_path: Path) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps(model_config))
    flags = ["--model_config_file", str(config), "--bind", "127.0.0.1:{port}"]
    with CliServer(flask_predict(), flags, tmp_path, workers=2,
                   log_path=tmp_path / "log") as server:
        assert len(worker_pids(server, want=2)) == 2  # sync workers, models in each
        log = server.log_text()
    # scikit-learn once, in the master, shared by each worker; the custom model in each worker
    assert log.count("model 'iris': version 1 loaded") == 1
    assert log.count("model 'iris': version 1 shared from the master") == 2
    assert log.count("model 'echo': version 1 loaded") == 2


def test_a_configuration_mistake_stops_the_master(tmp_path: Path) -> None:
    done = subprocess.run([flask_predict(), "serve", "--model_name", "ghost",
                           "--model_base_path", str(tmp_path / "missing"),
                           "--bind", "127.0.0.1:0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "flask_predict: configuration error" in done.stderr
    assert "is not a directory" in done.stderr


def test_a_model_config_file_that_does_not_parse_says_so_as_tf_serving(tmp_path: Path) -> None:
    """TF Serving's own test of a bad ``--model_config_file`` looks for these words in the
    server's standard error."""
    config = tmp_path / "models.config"
    config.write_text("model_config_list {\n  config {\n    name: 'm'\n    base_path: @\n")
    done = subprocess.run([flask_predict(), "serve", "--model_config_file", str(config),
                           "--bind", "127.0.0.1:0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert ("Error parsing text-format tensorflow.serving.ModelServerConfig: 4:16: "
            "unexpected '@'") in done.stderr
    assert str(config) in done.stderr
