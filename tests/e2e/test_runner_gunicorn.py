"""The runner (docs/runner.md) under real gunicorn with two workers: TF Serving's test
SavedModels, a TF2 export with several signatures and real ONNX models, loaded once in the
runner process, answer exactly as the same models loaded in each worker (``PREDICT_RUNNER``
false) on every protocol, REST and gRPC; no worker maps TensorFlow's or ONNX Runtime's
library; the runner SIGKILLed under load is started again by the master (every request in
the meantime answered, 503 while it is down, the same workers serving after); a new version
rolls out through it, and a broken one keeps the version served."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from tests import onnx_models
from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import children, request, runners
from tests.tf_models import copy_version, export_multi

pytest.importorskip("flask_predict_tensorflow")
pytest.importorskip("flask_predict_onnx")
tf = pytest.importorskip("tensorflow")

from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]

FRAMEWORK_LIBRARIES = ("libtensorflow", "_pywrap_tensorflow", "onnxruntime")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, tfserving_models: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("runner")
    onnx_models.torch_like(root / "torch")
    onnx_models.every_type(root / "types")
    rollout = copy_version(tfserving_models, "saved_model_half_plus_two_cpu", root / "rollout", 1)
    return {
        "models": {
            "half_plus_two": {"base_path": os.fspath(tfserving_models
                                                     / "saved_model_half_plus_two_cpu"),
                              "version_labels": {"stable": 123}},
            "multi": {"base_path": os.fspath(export_multi(root / "multi"))},
            "torch": {"base_path": os.fspath(root / "torch")},
            "types": {"base_path": os.fspath(root / "types")},
        },
        "rollout": rollout, "root": root, "tfserving": tfserving_models,
    }


@pytest.fixture(scope="module")
def in_worker(folders: dict[str, Any]) -> Iterator[GrpcGunicornServer]:
    with GrpcGunicornServer(folders["models"], workers=2, env={"FLASK_PREDICT_RUNNER": "false"},
                            log_path=folders["root"] / "in_worker.log") as running:
        yield running


@pytest.fixture(scope="module")
def runner(folders: dict[str, Any]) -> Iterator[GrpcGunicornServer]:
    models = {**folders["models"], "rollout": {"base_path": os.fspath(folders["rollout"])}}
    with GrpcGunicornServer(models, workers=2, env={"FLASK_PREDICT_POLL_SECONDS": "0.5"},
                            log_path=folders["root"] / "runner.log") as running:
        yield running


def tf_rest(path: str, body: Any = None) -> tuple[str, str, Any]:
    return ("POST" if body is not None else "GET", path, body)


def v2(model: str, *tensors: tuple[str, str, list[int], list[Any]], **extra: Any
       ) -> tuple[str, str, Any]:
    body = {"inputs": [{"name": n, "datatype": d, "shape": s, "data": v}
                       for n, d, s, v in tensors], **extra}
    return "POST", f"/v2/models/{model}/infer", body


REST_CASES = [
    tf_rest("/v1/models/half_plus_two:predict", {"instances": [1.0, 2.0, 5.0]}),
    tf_rest("/v1/models/half_plus_two/labels/stable:predict", {"inputs": {"x": [[0.5], [7]]}}),
    tf_rest("/v1/models/half_plus_two:classify",
            {"signature_name": "classify_x_to_y", "examples": [{"x": 1.0}, {"x": -2.5}]}),
    tf_rest("/v1/models/half_plus_two:regress",
            {"signature_name": "regress_x_to_y2", "examples": [{"x": 1.0}, {"x": 4.0}]}),
    tf_rest("/v1/models/half_plus_two:predict", {"signature_name": "nope", "instances": [1.0]}),
    tf_rest("/v1/models/half_plus_two:predict", {"instances": ["text"]}),
    tf_rest("/v1/models/half_plus_two/metadata"),
    tf_rest("/v1/models/multi:predict", {"instances": [{"x": 1.25, "s": "ab"},
                                                       {"x": -3.5, "s": "été"}]}),
    tf_rest("/v1/models/multi:predict", {"signature_name": "ints", "instances": [1, 2, 2**31 - 2]}),
    tf_rest("/v1/models/multi:predict", {"instances": [{"x": 1.0, "s": "a"}],
                                         "output_filter": ["tagged_bytes"]}),
    tf_rest("/v1/models/multi:classify", {"signature_name": "classify",
                                          "examples": [{"x": 0.25}, {"x": 0.75}]}),
    tf_rest("/v1/models/multi/metadata"),
    ("POST", "/v1/projects/p/models/half_plus_two:predict", {"instances": [1.0, 3.0]}),
    v2("half_plus_two", ("x", "FP32", [3, 1], [1.0, 2.5, -4.0])),
    v2("half_plus_two", ("x", "FP32", [2, 1], [1.0, 2.0]), outputs=[{"name": "y"}]),
    v2("half_plus_two", ("x", "FP32", [2, 2], [1.0, 2.0])),
    ("GET", "/v2/models/half_plus_two", None),
    v2("torch", ("input", "FP32", [2, 4], [5.1, 3.5, 1.4, 0.2, 6.2, 2.9, 4.3, 1.3])),
    tf_rest("/v1/models/torch:predict", {"instances": [[5.1, 3.5, 1.4, 0.2]]}),
    v2("torch", ("input", "FP64", [1, 4], [5.1, 3.5, 1.4, 0.2])),
    ("GET", "/v2/models/torch", None),
    v2("types", *[(d.lower(), d, [2, 2], onnx_models.type_values(d).reshape(-1).tolist())
                  for d in onnx_models.TYPES]),
]


@pytest.mark.parametrize("case", REST_CASES, ids=lambda c: f"{c[0]} {c[1]}")
def test_rest_answers_as_in_worker(in_worker: GrpcGunicornServer, runner: GrpcGunicornServer,
                                   case: tuple[str, str, Any]) -> None:
    method, path, body = case
    ours = request(method, runner.url + path, body=body)
    theirs = request(method, in_worker.url + path, body=body)
    assert ours[0] == theirs[0] and ours[0] != 500
    if path.endswith("/metadata"):
        # TF Serving's signature_def maps come in protobuf's map order, which differs from
        # one process to the next (in-worker too, between two servers): same content
        assert json.loads(ours[2]) == json.loads(theirs[2])
    else:
        assert ours[2] == theirs[2]


def grpc_predict(server: GrpcGunicornServer, model: str, inputs: dict[str, np.ndarray],
                 signature: str = "", outputs: tuple[str, ...] = ()) -> tuple[str, bytes]:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = model
    req.model_spec.signature_name = signature
    req.output_filter.extend(outputs)
    for alias, array in inputs.items():
        req.inputs[alias].CopyFrom(tf.make_tensor_proto(array))
    with server.channel() as chan:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(chan)
        try:
            return "OK", stub.Predict(req, timeout=60).SerializeToString(deterministic=True)
        except Exception as exc:  # grpc.RpcError: compare code and message
            return str(exc.code()), exc.details().encode()  # type: ignore[attr-defined]


GRPC_CASES: list[tuple[str, dict[str, Any], str, tuple[str, ...]]] = [
    ("half_plus_two", {"x": np.array([[1.0], [2.5]], np.float32)}, "", ()),
    ("multi", {"x": np.array([1.5, -2.0], np.float32), "s": np.array([b"a", b"\xff"])}, "",
     ("upper", "rounded")),
    ("multi", {"n": np.array([3, 4], np.int32)}, "ints", ()),
    ("multi", {"n": np.array([3.5], np.float32)}, "ints", ()),
    ("torch", {"input": np.ones((3, 4), np.float32)}, "", ()),
]


@pytest.mark.parametrize("case", GRPC_CASES, ids=lambda c: f"{c[0]}-{c[2] or 'default'}")
def test_grpc_answers_as_in_worker(in_worker: GrpcGunicornServer, runner: GrpcGunicornServer,
                                   case: tuple[str, dict[str, Any], str, tuple[str, ...]]) -> None:
    model, inputs, signature, outputs = case
    assert grpc_predict(runner, model, inputs, signature, outputs) == \
        grpc_predict(in_worker, model, inputs, signature, outputs)


def mapped(pid: int) -> list[str]:
    with open(f"/proc/{pid}/maps") as file:
        text = file.read()
    return [name for name in FRAMEWORK_LIBRARIES if name in text]


def test_no_worker_maps_a_framework(runner: GrpcGunicornServer,
                                    in_worker: GrpcGunicornServer) -> None:
    assert runner.process is not None and in_worker.process is not None
    workers = children(runner.process.pid)
    assert len(workers) == 2
    assert {pid: mapped(pid) for pid in workers} == {pid: [] for pid in workers}
    (hosting,) = runners(runner.process.pid)
    assert set(mapped(hosting)) == set(FRAMEWORK_LIBRARIES)
    # the baseline does map them, in every worker, and runs no runner
    assert all(mapped(pid) for pid in children(in_worker.process.pid))
    assert not runners(in_worker.process.pid)


def ready(server: GrpcGunicornServer) -> int:
    return request("GET", server.url + "/v2/health/ready", timeout=10)[0]


def wait_for(check: Callable[[], bool], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout}s"
        time.sleep(0.05)


def predict_rollout(server: GrpcGunicornServer) -> tuple[int, Any]:
    status, _, body = request("POST", server.url + "/v1/models/rollout:predict",
                              body={"instances": [0.0]}, timeout=60)
    return status, json.loads(body) if body else None


def test_runner_killed_under_load(runner: GrpcGunicornServer) -> None:
    assert runner.process is not None
    workers = children(runner.process.pid)
    (first,) = runners(runner.process.pid)
    answers: list[tuple[int, Any]] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            answer = predict_rollout(runner)
            answers.append(answer)
            if answer[0] != 200:
                time.sleep(0.02)

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(answers) >= 20, "answers before the kill")
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: ready(runner) != 200, "readiness saying not ready")
        wait_for(lambda: ready(runner) == 200, "readiness once the runner is back")
        served = len(answers)
        wait_for(lambda: sum(a[0] == 200 for a in answers[served:]) >= 20, "answers after")
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    statuses = {status for status, _ in answers}
    assert statuses <= {200, 503}, statuses  # never a hang (0), a 500 or a dead worker
    assert 503 in statuses
    assert all(body["predictions"] == [2.0] for status, body in answers if status == 200)
    assert all("error" in body for status, body in answers if status == 503)
    assert children(runner.process.pid) == workers
    assert runners(runner.process.pid) - {first}
    metrics = request("GET", runner.url + "/metrics")[2].decode()
    assert 'flask_predict_runner_up{gpu="",runner="0"} 1.0' in metrics
    assert 'flask_predict_runner_restarts_total{gpu="",runner="0"} 1.0' in metrics
    executed = [line for line in metrics.splitlines() if line.startswith(
        'flask_predict_model_executions_total{model="rollout",version="1"}')]
    assert executed and float(executed[0].split()[-1]) >= 20  # since the restart
    status = json.loads(request("GET", runner.url + "/status.json")[2])
    assert [(r["up"], r["restarts"]) for r in status["runners"]] == [(True, 1)]


def test_new_version_rolls_out_and_a_broken_one_keeps_it(runner: GrpcGunicornServer,
                                                          folders: dict[str, Any]) -> None:
    base: Path = folders["rollout"]
    copy_version(folders["tfserving"], "saved_model_half_plus_three", base, 2)
    # every worker serves version 2 (0.5x + 3) from the runner
    wait_for(lambda: all(predict_rollout(runner) == (200, {"predictions": [3.0]})
                         for _ in range(6)), "version 2 in every worker")
    staging = base.parent / ".rollout-3"
    staging.mkdir()
    (staging / "saved_model.pb").write_bytes(b"not a SavedModel")
    staging.rename(base / "3")

    def failed() -> bool:
        status, _, body = request("GET", runner.url + "/v1/models/rollout")
        states = {s["version"]: s for s in json.loads(body)["model_version_status"]}
        return "3" in states and states["3"]["status"]["error_code"] != "OK"

    wait_for(failed, "version 3 failing to load")
    assert all(predict_rollout(runner) == (200, {"predictions": [3.0]}) for _ in range(6))
    shutil.rmtree(base / "3")


def settle(server: GrpcGunicornServer, count: int) -> set[int]:
    assert server.process is not None
    master = server.process.pid
    wait_for(lambda: len(children(master)) == count and ready(server) == 200,
             f"{count} ready workers")
    return children(master)


def test_hup_ttin_ttou_keep_the_runner(runner: GrpcGunicornServer) -> None:
    """New workers (a reload, one more, one fewer) serve from the same runner, which loads
    nothing again; none of them maps TensorFlow."""
    assert runner.process is not None
    master = runner.process.pid
    hosts = runners(master)
    before = settle(runner, 2)
    os.kill(master, signal.SIGHUP)
    wait_for(lambda: not children(master) & before, "the workers replaced")
    after = settle(runner, 2)
    os.kill(master, signal.SIGTTIN)
    grown = settle(runner, 3)
    assert predict_rollout(runner) == (200, {"predictions": [3.0]})
    assert {pid: mapped(pid) for pid in grown} == {pid: [] for pid in grown}
    os.kill(master, signal.SIGTTOU)
    settle(runner, 2)
    assert runners(master) == hosts and after
    assert all(predict_rollout(runner) == (200, {"predictions": [3.0]}) for _ in range(6))


def test_term_drains_the_requests_in_flight(folders: dict[str, Any]) -> None:
    """TERM under load: every request the server took is answered (the workers finish
    theirs, then the runner stops), and the runner exits with the master."""
    models = {"half_plus_two": folders["models"]["half_plus_two"]}
    server = GrpcGunicornServer(models, workers=2, log_path=folders["root"] / "term.log")
    server.start()
    assert server.process is not None
    (host,) = runners(server.process.pid)
    answers: list[int] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            status, _, _ = request("POST", server.url + "/v1/models/half_plus_two:predict",
                                   body={"instances": [1.0] * 50}, timeout=60)
            if status == 0:  # the listener closed: the server took no more
                return
            answers.append(status)

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(answers) >= 30, "answers before TERM")
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(120)
    stop.set()
    for thread in threads:
        thread.join()
    assert set(answers) == {200}
    wait_for(lambda: not os.path.exists(f"/proc/{host}") or
             Path(f"/proc/{host}/stat").read_text().split()[2] == "Z", "the runner gone")
    server.stop()
