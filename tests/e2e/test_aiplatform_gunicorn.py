"""AI Platform and Vertex AI container routes under real gunicorn with 2 sync workers, and a
third-party plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import ROOT, GunicornServer, request, worker_pids

pytestmark = pytest.mark.e2e

PREDICT = "/v1/projects/demo/models/{}:predict"


def post(server: GunicornServer, model: str, body: Any) -> tuple[int, Any]:
    status, _, data = request("POST", server.url + PREDICT.format(model), body=body)
    return status, json.loads(data)


def test_two_workers_serve_every_model(model_config: dict[str, Any], tmp_path: Path) -> None:
    with GunicornServer(model_config, workers=2, log_path=tmp_path / "log") as server:
        pids = worker_pids(server, want=2)
        assert len(pids) == 2, "both workers answered"
        assert post(server, "iris", {"instances": [[5.1, 3.5, 1.4, 0.2]]}) == \
            (200, {"predictions": [0]})
        status, _, data = request("POST", server.url + PREDICT.format("xgb"),
                                  data=b'{"instances": [[NaN, 0, 0, 0], [0.0, 0, 0, 0]]}')
        missing, zero = json.loads(data)["predictions"]
        assert status == 200 and missing > 0.9 and zero < 0.1
        # bad input and a failing predictor leave every worker alive
        for _ in range(6):
            assert post(server, "iris", {"instances": [[1, 2]]})[0] == 400
            assert post(server, "echo", {"instances": [1], "fail": True})[0] == 500
            assert request("POST", server.url + PREDICT.format("iris"),
                           data=b"[" * 100_000)[0] == 400
        assert post(server, "nope", {"instances": [[1]]})[0] == 404
        assert worker_pids(server, want=2) == pids, "no worker died"


def test_bad_configuration_stops_the_server_at_boot(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLASK_PREDICT_")}
    env["FLASK_PREDICT_MODELS"] = json.dumps({"m": {"base_path": str(tmp_path / "missing")}})
    done = subprocess.run([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                           "--bind", "127.0.0.1:0", "wsgi:app"], cwd=ROOT, env=env,
                          capture_output=True, timeout=60)
    assert done.returncode != 0
    assert b"base_path" in done.stderr and b"is not a directory" in done.stderr


def test_third_party_plugin_installed_with_pip(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target),
                    str(ROOT / "tests" / "thirdparty_plugin")], check=True, timeout=300)
    (tmp_path / "model" / "1").mkdir(parents=True)
    (tmp_path / "model" / "1" / "threshold.json").write_text('{"threshold": 0.5}')
    # no "predictor": the plugin's manifest claims the folder, as the bundled plugins do
    models = {"gate": {"base_path": str(tmp_path / "model")}}
    env = {"PYTHONPATH": str(target)}
    with GunicornServer(models, workers=2, env=env) as server:
        assert post(server, "gate", {"instances": [0.2, 0.7, 3]}) == \
            (200, {"predictions": [0, 1, 1]})


def test_vertex_container_serves_a_local_storage_uri(model_root: Path, tmp_path: Path) -> None:
    """Vertex AI's environment as it starts a custom container, with the artifacts folder
    (model.joblib at its top, no version folders) mounted locally."""
    route = "/v1/endpoints/123/deployedModels/456"
    env = {"AIP_STORAGE_URI": str(model_root / "iris" / "1"), "AIP_HEALTH_ROUTE": route,
           "AIP_PREDICT_ROUTE": route + ":predict", "TMPDIR": str(tmp_path)}
    with GunicornServer(None, workers=2, env=env, ready_path=route,
                        log_path=tmp_path / "log") as server:
        status, _, data = request("POST", server.url + route + ":predict",
                                  body={"instances": [[5.1, 3.5, 1.4, 0.2]], "parameters": {}})
        assert (status, json.loads(data)) == (200, {"predictions": [0]})
        status, _, data = request("GET", server.url + route)
        assert (status, json.loads(data)) == (200, {})


def test_vertex_health_without_a_model_is_503(tmp_path: Path) -> None:
    route = "/v1/endpoints/123/deployedModels/456"
    with GunicornServer(None, workers=2, env={"AIP_HEALTH_ROUTE": route}, ready_path=route,
                        ready_status=503, log_path=tmp_path / "log") as server:
        status, _, data = request("GET", server.url + route)
        assert status == 503 and "no model is configured" in json.loads(data)["error"]
