"""The peer servers, KServe and MLServer, serving the benchmark's model files.

Each runs from a virtual environment of its own under ``benchmarks/.peers-venv``
(git-ignored): ``kserve/`` from ``requirements-kserve.txt`` and ``mlserver/`` from
``requirements-mlserver.txt`` (one venv for both cannot be resolved: their pins on FastAPI
and its neighbours conflict), which :func:`peer_venv` creates the first time. The project's
venv never gets them.

* KServe: ``kserve_server.py`` (its sklearnserver/xgbserver predict paths), 2 uvicorn
  workers, request logging off, gRPC off unless a *grpc_port* is given; its V1 route
  (``:predict``) and its V2 route (``/infer``) are two targets on one server.
* MLServer: mlserver-sklearn and mlserver-xgboost, ``parallel_workers=2``, metrics off, its
  V2 gRPC server on *grpc_port* (MLServer always starts one; a free port by default).
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


def kserve(models: Path, workers: int = 2, grpc_port: int | None = None) -> list[Server]:
    """KServe's V1 and V2 routes, one server; its V2 gRPC server too on *grpc_port*."""
    command = [str(peer_venv("kserve") / "bin" / "python"), str(HERE / "kserve_server.py"),
               "--lr_dir", str(models / "lr" / "1"), "--xgb_dir", str(models / "xgb" / "1"),
               "--http_port", "{port}", "--workers", str(workers)]
    if grpc_port is not None:
        command += ["--grpc_port", str(grpc_port)]
    return [Server("kserve V1", command, path="/v1/models/{model}:predict",
                   ready_path="/v1/models/xgb", ready_status=200, body_format="instances",
                   process="kserve"),
            Server("kserve V2", command, path="/v2/models/{model}/infer",
                   body_format="v2 default outputs", process="kserve")]


def mlserver(models: Path, workers: int = 2, grpc_port: int | None = None) -> Server:
    """MLServer's V2 route; its V2 gRPC server listens on *grpc_port* (default: a free one)."""
    repository = mlserver_repository(models, workers, grpc_port or harness.free_port())
    # its CLI's module, not the bin/mlserver script: a script's #! line holds the path the
    # venv was created at, and breaks when the venv is moved
    command = [str(peer_venv("mlserver") / "bin" / "python"), "-m", "mlserver.cli.main",
               "start", str(repository)]
    return Server("mlserver V2", command,
                  # its /v2/health/ready is true before any model is registered
                  path="/v2/models/{model}/infer", ready_path="/v2/models/xgb/ready",
                  ready_status=200, body_format="v2",
                  env={"MLSERVER_HTTP_PORT": "{port}", "MLSERVER_HOST": "127.0.0.1"})


def mlserver_repository(models: Path, workers: int, grpc_port: int) -> Path:
    """An MLServer model repository over the same model files, gRPC on *grpc_port*."""
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
        "grpc_port": grpc_port, "metrics_port": harness.free_port()}))
    return repository
