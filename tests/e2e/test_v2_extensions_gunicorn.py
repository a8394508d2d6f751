"""The V2 repository and statistics extensions under real gunicorn with 2 sync workers,
through tritonclient's HTTP and gRPC clients: load and unload reach every worker (through
each worker's watcher) and outlive a SIGKILLed worker; statistics sum every worker's
requests; load and unload refuse callers without the admin token when loopback is off.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Callable, Iterator

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from tests.e2e.grpc_support import GrpcGunicornServer, worker_of

pytestmark = pytest.mark.e2e

POLL_SECONDS = 0.5
ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3]])
ADMIN = "admin-token-0123456789"
CLIENT = "client-token-0123456789"
Index = dict[str, tuple[str, str]]
"""One worker's repository index: model name -> (state, reason)."""


@pytest.fixture(scope="module")
def server(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GrpcGunicornServer]:
    folder = tmp_path_factory.mktemp("v2ext")
    models = {name: model_config[name] for name in ("iris", "echo")}
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log",
                            env={"FLASK_PREDICT_POLL_SECONDS": str(POLL_SECONDS)}) as running:
        yield running


def index_of_each_worker(server: GrpcGunicornServer, until: Callable[[dict[int, Index]], bool],
                         timeout: float = 60) -> dict[int, Index]:
    """Each worker's own repository index (``RepositoryIndex`` over fresh connections, so
    the kernel spreads them over the workers), asked again until *until* holds."""
    seen: dict[int, Index] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with server.channel() as chan:
            answer, call = service_pb2_grpc.GRPCInferenceServiceStub(chan).RepositoryIndex \
                .with_call(service_pb2.RepositoryIndexRequest(), timeout=30,
                           wait_for_ready=True)
        seen[worker_of(call)] = {m.name: (m.state, m.reason) for m in answer.models}
        if until(seen):
            return seen
    raise AssertionError(f"the workers did not converge: {seen}")


def all_workers(want: Index, among: int = 2) -> Callable[[dict[int, Index]], bool]:
    """*among* workers answered, the latest answer of each equal to *want*."""
    return lambda seen: len(seen) >= among and all(i == want for i in seen.values())


def infer_over_grpc(chan: grpc.Channel) -> int:
    """One ``ModelInfer`` (raw contents, as tritonclient sends); the worker that answered."""
    request = service_pb2.ModelInferRequest(model_name="iris",
                                            raw_input_contents=[ROWS.tobytes()])
    request.inputs.add(name="inputs", datatype="FP64", shape=list(ROWS.shape))
    _, call = service_pb2_grpc.GRPCInferenceServiceStub(chan).ModelInfer.with_call(
        request, timeout=30, wait_for_ready=True)
    return worker_of(call)


def eventually(condition: Callable[[], bool], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


READY = {"iris": ("READY", ""), "echo": ("READY", "")}
IRIS_UNLOADED = {"iris": ("UNAVAILABLE", "unloaded"), "echo": ("READY", "")}


def test_statistics_are_summed_over_the_workers(server: GrpcGunicornServer) -> None:
    http = httpclient.InferenceServerClient(server.url[len("http://"):])
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        before = http.get_inference_statistics("iris")["model_stats"][0]["inference_count"]
        per_worker: dict[int, int] = {}
        while len(per_worker) < 2 or min(per_worker.values()) < 2:
            with server.channel() as chan:  # a new connection: either worker
                pid = infer_over_grpc(chan)
            per_worker[pid] = per_worker.get(pid, 0) + 1
        rest = httpclient.InferInput("inputs", list(ROWS.shape), "FP64")
        rest.set_data_from_numpy(ROWS)
        for _ in range(3):
            http.infer("iris", [rest])
        sent = sum(per_worker.values()) + 3

        # each worker writes its counts to the shared registry once a second
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            stats = http.get_inference_statistics("iris", "1")["model_stats"][0]
            if stats["inference_count"] - before >= sent:
                break
            time.sleep(0.2)
        assert stats["inference_count"] - before == sent
        inference = stats["inference_stats"]
        assert inference["success"]["count"] - before == sent
        assert inference["compute_infer"]["count"] >= sent
        assert inference["compute_infer"]["ns"] > 0 and stats["last_inference"] > 0
        over_grpc = triton.get_inference_statistics("iris", as_json=True)["model_stats"][0]
        assert int(over_grpc["inference_count"]) == stats["inference_count"]
        assert over_grpc["name"] == "iris" and over_grpc["version"] == "1"
        every = triton.get_inference_statistics(as_json=True)["model_stats"]
        assert sorted(s["name"] for s in every) == ["echo", "iris"]
        with pytest.raises(InferenceServerException) as missing:
            triton.get_inference_statistics("nope")
        assert missing.value.status() == "StatusCode.NOT_FOUND"
    finally:
        http.close()
        triton.close()


def test_load_and_unload_reach_every_worker_and_outlive_a_killed_one(
        server: GrpcGunicornServer) -> None:
    http = httpclient.InferenceServerClient(server.url[len("http://"):])
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        assert "model_repository" in http.get_server_metadata()["extensions"]
        assert "statistics" in triton.get_server_metadata(as_json=True)["extensions"]
        index = http.get_model_repository_index()
        assert [(m["name"], m["version"], m["state"]) for m in index] == [
            ("iris", "1", "READY"), ("echo", "1", "READY")]
        index_of_each_worker(server, all_workers(READY))

        triton.unload_model("iris")  # over gRPC: every worker follows
        workers = index_of_each_worker(server, all_workers(IRIS_UNLOADED))
        assert not http.is_model_ready("iris")
        names = [m["name"] for m in triton.get_model_repository_index(as_json=True)["models"]
                 if m.get("state") == "READY"]
        assert names == ["echo"]

        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        # the worker gunicorn starts in its place reads the unloaded set when it loads
        respawned = index_of_each_worker(server, lambda seen: any(
            pid not in workers and index == IRIS_UNLOADED for pid, index in seen.items()))

        http.load_model("iris")  # over REST: every worker, the new one too, serves it again
        fresh = [pid for pid in respawned if pid not in workers]
        index_of_each_worker(server, lambda seen: all(
            seen.get(pid) == READY for pid in [max(workers), *fresh]))
        assert http.is_model_ready("iris")
        rest = httpclient.InferInput("inputs", list(ROWS.shape), "FP64")
        rest.set_data_from_numpy(ROWS)
        assert http.infer("iris", [rest]).get_response()["outputs"]

        for client in (http, triton):
            with pytest.raises(InferenceServerException) as unknown:
                client.load_model("nope")
            assert "failed to load 'nope'" in unknown.value.message()
    finally:
        http.close()
        triton.close()


# --- a server that wants tokens ------------------------------------------------------------

@pytest.fixture(scope="module")
def guarded(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[GrpcGunicornServer]:
    folder = tmp_path_factory.mktemp("v2ext_guarded")
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL_SECONDS),
           "FLASK_PREDICT_ADMIN_TOKENS": ADMIN, "FLASK_PREDICT_AUTH_TOKENS": CLIENT,
           "FLASK_PREDICT_ADMIN_LOOPBACK": "false"}
    with GrpcGunicornServer({"echo": model_config["echo"]}, workers=2, env=env,
                            log_path=folder / "server.log") as running:
        yield running


def test_load_and_unload_need_the_admin_token(guarded: GrpcGunicornServer) -> None:
    http = httpclient.InferenceServerClient(guarded.url[len("http://"):])
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{guarded.grpc_port}")
    admin = {"authorization": f"Bearer {ADMIN}"}
    user = {"authorization": f"Bearer {CLIENT}"}
    try:
        for client in (http, triton):
            for call in (client.unload_model, client.load_model):
                with pytest.raises(InferenceServerException) as refused:
                    call("echo", headers=user)  # a client token is not an admin token
                assert refused.value.status() in ("401", "StatusCode.UNAUTHENTICATED")
        assert triton.is_server_live(headers=user)
        with pytest.raises(InferenceServerException) as anonymous:
            triton.get_model_repository_index()
        assert anonymous.value.status() == "StatusCode.UNAUTHENTICATED"
        triton.unload_model("echo", headers=admin)
        # the other worker follows at its next poll
        assert eventually(lambda: not http.is_model_ready("echo", headers=user))
        http.load_model("echo", headers=admin)
        assert eventually(lambda: http.is_model_ready("echo", headers=user))
        ready = [{"name": "echo", "version": "1", "state": "READY"}]  # empty reason: left out
        assert eventually(lambda: triton.get_model_repository_index(
            headers=user, as_json=True)["models"] == ready)
    finally:
        http.close()
        triton.close()

