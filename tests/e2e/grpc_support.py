"""What the gRPC end-to-end tests share: a gunicorn server with a gRPC port, channels that
open their own connection, the worker that answered a call, and a grps client generated
from our ``grps.proto`` as a grps user would generate it."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

import grpc

from tests.e2e.server import GunicornServer, free_port

PROTOS = Path(__file__).resolve().parents[2] / "flask_predict" / "grpc" / "protos"
WORKER_KEY = "flask-predict-worker"


class GrpcGunicornServer(GunicornServer):
    """A gunicorn server whose workers also serve gRPC, on ``grpc_port``."""

    def __init__(self, models: Any, workers: int = 2, env: Mapping[str, str] | None = None,
                 log_path: Path | None = None) -> None:
        self.grpc_port = free_port()
        super().__init__(models, workers=workers, log_path=log_path,
                         env={"FLASK_PREDICT_GRPC_PORT": str(self.grpc_port),
                              "FLASK_PREDICT_GRPC_HOST": "127.0.0.1", **(env or {})})

    def channel(self) -> grpc.Channel:
        """A channel with a connection of its own (not shared with other channels), so
        that several channels can reach several workers."""
        return grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}",
                                     options=[("grpc.use_local_subchannel_pool", 1)])


def worker_of(call: Any) -> int:
    """The pid of the worker that answered *call* (a ``with_call`` result's call)."""
    metadata = dict(call.trailing_metadata() or ())
    return int(metadata[WORKER_KEY])


def answering_workers(server: GrpcGunicornServer, ask: Callable[[grpc.Channel], Any],
                      want: int = 2, timeout: float = 90) -> set[int]:
    """Distinct worker pids seen while asking over fresh channels until *want* answered."""
    pids: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(pids) < want and time.monotonic() < deadline:
        with server.channel() as chan:
            pids.add(worker_of(ask(chan)))
    return pids


def generated_grps(folder: Path) -> tuple[ModuleType, ModuleType]:
    """``grps_pb2`` and ``grps_pb2_grpc`` generated from our ``grps.proto`` by grpcio-tools."""
    # protoc in its own process: grpcio-tools' protobuf C++ library must not meet
    # TensorFlow's in this one
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}",
                    f"--python_out={folder}", f"--grpc_python_out={folder}", "grps/grps.proto"],
                   check=True)
    sys.path.insert(0, str(folder))
    try:
        return (importlib.import_module("grps.grps_pb2"),
                importlib.import_module("grps.grps_pb2_grpc"))
    finally:
        sys.path.remove(str(folder))
