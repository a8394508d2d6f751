"""The runner on GPUs (skips without an NVIDIA GPU): one runner per visible GPU, each with
``CUDA_VISIBLE_DEVICES`` narrowed to its GPU, the only processes that map CUDA's driver
library (one CUDA context per GPU whatever the worker count), and the answers those of the
CPU."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.server import GunicornServer, children, request, runners

pytest.importorskip("flask_predict_tensorflow")

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow, pytest.mark.gpu]

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


def gpu_count() -> int:
    try:
        return len(os.listdir(NVIDIA_GPUS))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def server(tfserving_models: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GunicornServer]:
    if not gpu_count():
        pytest.skip("no NVIDIA GPU on this machine")
    models = {"half_plus_two": {"base_path": os.fspath(
        tfserving_models / "saved_model_half_plus_two_cpu")}}
    folder = tmp_path_factory.mktemp("runner_gpu")
    with GunicornServer(models, workers=max(4, 2 * gpu_count()), timeout=300,
                        log_path=folder / "server.log") as running:
        yield running


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)


def maps_cuda(pid: int) -> bool:
    return "libcuda.so" in Path(f"/proc/{pid}/maps").read_text()


def test_one_runner_per_gpu_and_no_worker_touches_cuda(server: GunicornServer) -> None:
    assert server.process is not None
    for _ in range(20):
        status, _, body = request("POST", server.url + "/v1/models/half_plus_two:predict",
                                  body={"instances": [1.0, 2.0]})
        assert (status, json.loads(body)) == (200, {"predictions": [2.5, 3.0]})
    hosts = runners(server.process.pid)
    assert len(hosts) == gpu_count()
    assert sorted(environ(pid)["CUDA_VISIBLE_DEVICES"] for pid in hosts) == \
        [str(n) for n in range(gpu_count())]
    assert all(maps_cuda(pid) for pid in hosts)
    assert not any(maps_cuda(pid) for pid in children(server.process.pid))
