"""The peer servers, KServe and MLServer, serving the benchmark's model files.

Each runs from a virtual environment of its own under ``benchmarks/.peers-venv``
(git-ignored): ``kserve/`` from ``requirements-kserve.txt`` and ``mlserver/`` from
``requirements-mlserver.txt`` (one venv for both cannot be resolved: their pins on FastAPI
and its neighbours conflict), which :func:`peer_venv` creates the first time. The project's
venv never gets them.

* KServe: ``kserve_server.py`` (its sklearnserver/xgbserver predict paths), 2 uvicorn
  workers, request logging and gRPC off; its V1 route (``:predict``) and its V2 route
  (``/infer``) are two targets on one server.
* MLServer: mlserver-sklearn and mlserver-xgboost, ``parallel_workers=2``, metrics off.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import harness
from harness import Server

HERE = Path(__file__).resolve().parent
VENVS = HERE / ".peers-venv"


def peer_venv(peer: str) -> Path:
    """``.peers-venv/<peer>``, created from ``requirements-<peer>.txt`` if missing."""
    venv = VENVS / peer
    done = venv / ".installed"
    if not done.exists():
        print(f"creating {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r",
                        str(HERE / f"requirements-{peer}.txt")], check=True)
        done.touch()
    return venv


def kserve(models: Path, workers: int = 2) -> list[Server]:
    """KServe's V1 and V2 routes, one server."""
    command = [str(peer_venv("kserve") / "bin" / "python"), str(HERE / "kserve_server.py"),
               "--lr_dir", str(models / "lr" / "1"), "--xgb_dir", str(models / "xgb" / "1"),
               "--http_port", "{port}", "--workers", str(workers)]
    return [Server("kserve V1", command, path="/v1/models/{model}:predict",
                   ready_path="/v1/models/xgb", ready_status=200, body_format="instances",
                   process="kserve"),
            Server("kserve V2", command, path="/v2/models/{model}/infer",
                   body_format="v2 default outputs", process="kserve")]


def mlserver(models: Path, workers: int = 2) -> Server:
    """MLServer's V2 route."""
    repository = mlserver_repository(models, workers)
    command = [str(peer_venv("mlserver") / "bin" / "mlserver"), "start", str(repository)]
    return Server("mlserver V2", command,
                  # its /v2/health/ready is true before any model is registered
                  path="/v2/models/{model}/infer", ready_path="/v2/models/xgb/ready",
                  ready_status=200, body_format="v2",
                  env={"MLSERVER_HTTP_PORT": "{port}", "MLSERVER_HOST": "127.0.0.1"})


def mlserver_repository(models: Path, workers: int) -> Path:
    """An MLServer model repository over the same model files."""
    repository = models.parent / "mlserver"
    implementations = {"lr": ("mlserver_sklearn.SKLearnModel", "model.joblib"),
                       "xgb": ("mlserver_xgboost.XGBoostModel", "model.json")}
    for name, (implementation, file) in implementations.items():
        folder = repository / name
        folder.mkdir(parents=True)
        (folder / "model-settings.json").write_text(json.dumps({
            "name": name, "implementation": implementation,
            "parameters": {"uri": str(models / name / "1" / file), "version": "1"}}))
    (repository / "settings.json").write_text(json.dumps({
        "parallel_workers": workers, "metrics_endpoint": None, "debug": False,
        "grpc_port": harness.free_port(), "metrics_port": harness.free_port()}))
    return repository
