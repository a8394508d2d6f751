"""The wheels ``make dist`` builds, installed into a fresh virtualenv outside the checkout:
``flask-predict serve`` there answers all four protocols with two sync workers.

Only flask-predict, the scikit-learn and the custom plugins are installed (the XGBoost and
TensorFlow wheels would pull in hundreds of megabytes); the other wheels are checked for
their contents."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e.server import ROOT, CliServer, request, worker_pids

pytestmark = pytest.mark.e2e

DISTRIBUTIONS = {
    ".": ("flask_predict", None),
    "plugins/sklearn": ("flask_predict_sklearn", "sklearn = flask_predict_sklearn.predictor:"
                                                 "SklearnPredictor"),
    "plugins/xgboost": ("flask_predict_xgboost", "xgboost = flask_predict_xgboost.predictor:"
                                                 "XGBoostPredictor"),
    "plugins/custom": ("flask_predict_custom", "custom = flask_predict_custom:CustomPredictor"),
    "plugins/tensorflow": ("flask_predict_tensorflow", "tensorflow = flask_predict_tensorflow."
                                                       "predictor:TensorFlowPredictor"),
}
"""Folder -> (package, its ``flask_predict.predictors`` entry point)."""
LOCAL_ONLY = (".git", ".venv*", ".*_cache", "build", "dist", "*.egg-info", "__pycache__", "models",
              "results")
"""What a clean clone lacks; the wheels are built from a copy without it (a build also leaves
its ``build/`` folder behind, which must not reach a later wheel)."""
INSTALLED = ["flask-predict", "flask-predict-sklearn", "flask-predict-custom"]


def pip(python: str | Path, *args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(python), "-m", "pip", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``make dist`` builds: one wheel per distribution (built here without build
    isolation, from this environment's setuptools, to stay quick)."""
    source = tmp_path_factory.mktemp("source") / "flask-predict"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LOCAL_ONLY))
    folder = tmp_path_factory.mktemp("dist")
    pip(sys.executable, "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", str(folder), *(str(source / path) for path in DISTRIBUTIONS),
        cwd=folder)
    return folder


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with three of the wheels installed; their
    dependencies come from the package index (or pip's cache)."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    assert ROOT not in where.parents
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    pip(where / "bin" / "python", "install", "--quiet", "--find-links", str(dist), *INSTALLED,
        cwd=where.parent)
    return where


def test_one_wheel_per_distribution(dist: Path) -> None:
    wheels = {path.name.split("-")[0]: path for path in dist.glob("*.whl")}
    assert set(wheels) == {module for module, _ in DISTRIBUTIONS.values()}
    for module, entry_point in DISTRIBUTIONS.values():
        with zipfile.ZipFile(wheels[module]) as wheel:
            names = wheel.namelist()
            tops = {name.split("/")[0] for name in names}
            assert tops == {module, f"{module}-0.1.0.dist-info"}, tops  # no tests, no demo
            assert f"{module}/py.typed" in names
            points = wheel.read(f"{module}-0.1.0.dist-info/entry_points.txt").decode()
        if entry_point is None:
            assert "[console_scripts]\nflask-predict = flask_predict.cli:main" in points
            assert {"flask_predict/wsgi.py", "flask_predict/gunicorn_config.py"} <= set(names)
        else:
            plugin = entry_point.split(" ")[0]
            assert f"[flask_predict.manifests]\n{plugin} = {module}.manifest:MANIFEST" in points
            assert f"[flask_predict.predictors]\n{entry_point}" in points


def test_installed_command_serves_every_protocol(venv: Path, model_config: dict[str, object],
                                                 tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    where = subprocess.run([str(python), "-c",
                            "import flask_predict; print(flask_predict.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True,
                           env={"PATH": os.environ["PATH"]}).stdout
    assert where.startswith(str(venv)), where  # the wheel, not the checkout
    config = tmp_path / "models.json"
    config.write_text(json.dumps({name: model_config[name] for name in ("iris", "echo")}))
    server = CliServer(str(venv / "bin" / "flask-predict"),
                       ["--model_config_file", str(config), "--bind", "127.0.0.1:{port}"],
                       tmp_path, workers=2, log_path=tmp_path / "log")
    server.env.pop("PYTHONPATH", None)
    rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]
    with server:
        assert len(worker_pids(server, want=2)) == 2
        status, _, body = request("POST", server.url + "/v1/projects/p/models/iris:predict",
                                  body={"instances": rows})
        assert (status, json.loads(body)) == (200, {"predictions": [0, 2]})
        status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                                  body={"signature_name": "serving_default",
                                        "inputs": {"inputs": rows}})
        assert status == 200 and json.loads(body)["outputs"]["predict"] == [0, 2]
        status, _, body = request("POST", server.url + "/v2/models/iris/infer", body={
            "inputs": [{"name": "inputs", "datatype": "FP64", "shape": [2, 4],
                        "data": [v for row in rows for v in row]}],
            "outputs": [{"name": "predict"}]})
        assert status == 200 and json.loads(body)["outputs"][0]["data"] == [0, 2]
        status, _, body = request("POST", server.url + "/grps/v1/infer/predict", body={
            "model": "iris-1", "gtensors": {"tensors": [{
                "name": "inputs", "dtype": "DT_FLOAT64", "shape": [2, 4],
                "flat_float64": [v for row in rows for v in row]}]}})
        tensors = {t["name"]: t for t in json.loads(body)["gtensors"]["tensors"]}
        assert status == 200 and tensors["predict"]["flat_int64"] == ["0", "2"]
        log = server.log_text()
    assert "Using worker: flask_predict.sync_worker.SyncWorker" in log
    assert "configuration error" not in log
