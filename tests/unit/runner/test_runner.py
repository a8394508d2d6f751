"""The runner's wire format, and a runner on a thread of this process serving real ONNX
models to the worker's proxy predictor: arrays of every dtype cross exactly, metadata and
errors arrive as the framework's predictor gives them, workers share one load, a restarted
runner loads its versions again, an unreachable one answers "unavailable", and an embedding
app (no runner named) loads its models in its own process."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from flask_predict import FlaskPredict, InvalidInput
from flask_predict.errors import DeadlineExceeded, ModelNotReady, UnreadableModel
from flask_predict.models import runner_client
from flask_predict.models.runner_client import RunnerClient, RunnerPredictor, runner_lookup
from flask_predict.models import runner_describe as describe
from flask_predict.models import runner_wire as wire
from flask_predict.runner.host import Runner
from tests.onnx_models import TYPES, every_type, torch_like, type_values

pytest.importorskip("flask_predict_onnx")
from flask_predict_onnx import ONNXPredictor  # noqa: E402


def roundtrip(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    left, right = socket.socketpair()
    with left, right:
        wire.send(left, {"op": "test"}, arrays)
        message = wire.Reader(right).receive()
    assert message is not None
    return message[1]


def test_arrays_cross_exactly_with_their_dtype_and_shape() -> None:
    arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3),
              "scalar": np.array(7, dtype=np.int64), "empty": np.zeros((0, 4)),
              "big_endian": np.arange(3, dtype=">i4"), "strided": np.arange(12.).reshape(3, 4).T,
              "half": np.array([1.5, np.nan, np.inf], np.float16),
              "text": np.array([[b"\x00\xff", b""], ["\u6771\u4eac", "\udcff"]], dtype=object),
              "bool": np.array([True, False])}
    back = roundtrip(arrays)
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape, name
        assert np.array_equal(back[name], array, equal_nan=array.dtype.kind == "f"), name
    assert [type(x) for x in back["text"].reshape(-1)] == [bytes, bytes, str, str]


def test_messages_larger_than_the_buffer_back_to_back_and_cut_anywhere_read_whole() -> None:
    large = np.arange(2048, dtype=np.float64)  # past the reader's buffer of 4 KiB
    small = np.arange(5, dtype=np.int32)
    left, right = socket.socketpair()
    with left, right:
        for arrays in ({"x": small}, {"x": large}, {"x": small}):
            wire.send(left, {"op": "test"}, arrays)  # all three before any is read
        reader = wire.Reader(right, size=4096)
        got = [reader.receive() for _ in range(3)]
        # one message cut into single bytes: read whole, nothing lost or run together
        pending = socket.socketpair()
        with pending[0], pending[1]:
            wire.send(pending[0], {"op": "one"}, {"x": small})
            data = pending[1].recv(1 << 16)
        writer = threading.Thread(target=lambda: [left.sendall(data[i:i + 1])
                                                  for i in range(len(data))])
        writer.start()
        cut = reader.receive()
        writer.join()
        left.close()
        assert reader.receive() is None  # closed between messages
    for message, sent in zip(got, (small, large, small)):
        assert message is not None and np.array_equal(message[1]["x"], sent)
    assert cut is not None and cut[0] == {"op": "one"} and np.array_equal(cut[1]["x"], small)
    got[1][1]["x"][0] = -1.0  # a large message's array is its own, and writable


def test_an_object_that_is_not_text_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(TypeError, match="dict"):
        wire.encode_arrays({"x": np.array([{"a": 1}], dtype=object)})


def test_a_broken_stream_is_an_error_not_a_message() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
        with pytest.raises(wire.WireError):
            wire.Reader(right).receive()


def test_errors_keep_their_kind_and_message() -> None:
    for raised in (InvalidInput("bad x"), UnreadableModel("cut short"),
                   DeadlineExceeded("too long", "f.py:1")):
        back = describe.error_from_json(describe.error_to_json(raised))
        assert type(back) is type(raised) and back.message == raised.message
    other = describe.error_from_json(describe.error_to_json(ZeroDivisionError("x")))
    assert isinstance(other, describe.RunnerCallFailed) and "ZeroDivisionError" in str(other)


@pytest.fixture(scope="module")
def onnx_folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runner_onnx")
    torch_like(root / "torch")
    every_type(root / "types")
    return {"torch": root / "torch" / "1", "types": root / "types" / "1"}


class Running:
    """A runner serving on a thread of this process, on a socket in *folder*."""

    def __init__(self, folder: Path) -> None:
        self.socket = os.fspath(folder / "runner.sock")
        self.state = os.fspath(folder / "runner.json")
        self.runner: Runner | None = None
        self.thread: threading.Thread | None = None
        self.client = RunnerClient(self.socket)

    def start(self) -> Runner:
        runner = self.runner = Runner(self.socket, self.state)
        runner.listen()
        runner.restore()
        self.thread = threading.Thread(target=runner.serve, daemon=True)
        self.thread.start()
        return runner

    def stop(self) -> None:
        if self.runner is not None and self.thread is not None:
            self.runner.stop()
            self.thread.join()


@pytest.fixture()
def running(tmp_path: Path) -> Iterator[Running]:
    started = Running(tmp_path)
    started.start()
    yield started
    started.stop()
    started.client.close()


def proxy_class(running: Running) -> type[RunnerPredictor]:
    return type("Runner_onnx", (RunnerPredictor,), {"plugin": "onnx", "client": running.client})


def test_the_proxy_answers_as_the_onnx_predictor(running: Running,
                                                 onnx_folders: dict[str, Path]) -> None:
    proxy = proxy_class(running).from_path(os.fspath(onnx_folders["types"]))
    own = ONNXPredictor.from_path(os.fspath(onnx_folders["types"]))
    assert proxy.metadata() == own.metadata()
    inputs = {d.lower(): type_values(d) for d in TYPES}
    ours, theirs = proxy.predict_tensors(inputs), own.predict_tensors(inputs)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name].dtype == theirs[name].dtype and np.array_equal(ours[name], theirs[name])
    only = proxy.predict_tensors(inputs, ["int8_out"])
    assert list(only) == ["int8_out"]
    with pytest.raises(InvalidInput) as ours_error:
        proxy.predict_tensors({"fp32": type_values("FP32")})
    with pytest.raises(InvalidInput) as own_error:
        own.predict_tensors({"fp32": type_values("FP32")})
    assert ours_error.value.message == own_error.value.message


def test_workers_share_one_load_closed_when_the_last_releases(
        running: Running, onnx_folders: dict[str, Path]) -> None:
    assert running.runner is not None
    cls = proxy_class(running)
    first = cls.from_path(os.fspath(onnx_folders["torch"]))
    second = cls.from_path(os.fspath(onnx_folders["torch"]))
    assert len(running.runner.entries) == 1
    (entry,) = running.runner.entries.values()
    entry.holders.add(1)  # another worker, on its own pid, holds it too
    first.close()
    assert len(running.runner.entries) == 1
    running.runner.release(entry.key, 1)
    second.close()
    assert running.runner.entries == {}


def test_a_load_that_fails_raises_the_plugins_error(running: Running, tmp_path: Path) -> None:
    folder = tmp_path / "broken" / "1"
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"not onnx")
    with pytest.raises(Exception) as failed:
        proxy_class(running).from_path(os.fspath(folder))
    own = pytest.raises(Exception, ONNXPredictor.from_path, os.fspath(folder))
    assert type(failed.value) is type(own.value) or isinstance(failed.value,
                                                                describe.RunnerCallFailed)


def test_a_restarted_runner_loads_its_versions_again(running: Running,
                                                     onnx_folders: dict[str, Path]) -> None:
    proxy = proxy_class(running).from_path(os.fspath(onnx_folders["torch"]))
    rows = {"input": np.ones((2, 4), np.float32)}
    before = proxy.predict_tensors(rows)
    running.stop()
    with pytest.raises(ModelNotReady):  # down: "unavailable" at once, never a hang
        proxy.predict_tensors(rows)
    assert not running.client.ready()
    runner = running.start()  # restore() ran: this process still holds the version
    assert running.client.ready() and len(runner.entries) == 1
    assert np.array_equal(proxy.predict_tensors(rows)["output"], before["output"])
    assert runner.stats()[0]["executions"] == [["", "", 1]]


def test_a_version_the_new_runner_lacks_is_loaded_again_on_use(
        running: Running, onnx_folders: dict[str, Path], tmp_path: Path) -> None:
    proxy = proxy_class(running).from_path(os.fspath(onnx_folders["torch"]))
    running.stop()
    os.unlink(running.state)  # the new runner knows nothing of it
    running.start()
    out = proxy.predict_tensors({"input": np.ones((1, 4), np.float32)})
    assert out["output"].shape == (1, 3)


def test_lookup_serves_runner_plugins_by_proxy_only_where_a_runner_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def plain(name: str) -> Any:
        return f"class of {name}"

    monkeypatch.delenv(runner_client.SOCKETS_VARIABLE, raising=False)
    assert runner_lookup(plain) == (plain, None)
    monkeypatch.setenv(runner_client.SOCKETS_VARIABLE, os.pathsep.join(["/a.sock", "/b.sock"]))
    find, client = runner_lookup(plain, worker_index=3)
    assert client is not None and client.path == "/b.sock"
    assert issubclass(find("onnx"), RunnerPredictor) and find("onnx").plugin == "onnx"
    assert find("tensorflow").plugin == "tensorflow"
    assert find("sklearn") == "class of sklearn"


def test_an_embedding_app_loads_in_its_own_process(onnx_folders: dict[str, Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from flask import Flask

    monkeypatch.delenv(runner_client.SOCKETS_VARIABLE, raising=False)
    app = Flask(__name__)
    app.config["PREDICT_MODELS"] = {"torch": {"base_path": os.fspath(
        onnx_folders["torch"].parent)}}
    FlaskPredict(app)
    state = app.extensions["predict"]
    assert type(state.service.repository.get("torch").predictor) is ONNXPredictor
    answer = app.test_client().post("/v2/models/torch/infer", json={"inputs": [
        {"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})
    assert answer.status_code == 200


def test_concurrent_callers_get_their_own_rows_from_shared_batches(
        tmp_path: Path, onnx_folders: dict[str, Path]) -> None:
    from flask_predict.runner.batched import Batching
    from flask_predict.settings.batching import BatchingParameters, BatchingSettings

    started = Running(tmp_path)
    runner = Runner(started.socket, started.state)
    parameters = BatchingParameters(max_batch_size=64, batch_timeout_micros=50_000,
                                    num_batch_threads=1)
    runner.batching = Batching(BatchingSettings(enabled=True, parameters=parameters), [],
                               runner.entries.get)
    runner.listen()
    runner.restore()
    thread = threading.Thread(target=runner.serve, daemon=True)
    thread.start()
    try:
        proxy = proxy_class(started).from_path(os.fspath(onnx_folders["torch"]))
        own = ONNXPredictor.from_path(os.fspath(onnx_folders["torch"]))
        rng = np.random.default_rng(5)
        asks = [rng.normal(size=(1 + i % 5, 4)).astype(np.float32) for i in range(24)]
        answers: dict[int, Any] = {}

        def ask(i: int) -> None:
            client = RunnerClient(started.socket)
            try:
                reply, out = client.request({"op": "call", "handle": proxy.handle,  # type: ignore[attr-defined]
                                             "method": "predict", "model": "torch",
                                             "version": "1", "outputs": None,
                                             "signature": None}, {"input": asks[i]})
                answers[i] = out if "error" not in reply else reply["error"]
            finally:
                client.close()

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(asks))]
        for each in threads:
            each.start()
        for each in threads:
            each.join()
        for i, rows in enumerate(asks):
            # float32 to its digits: a batch's matrix product may block differently
            np.testing.assert_allclose(answers[i]["output"],
                                       own.predict_tensors({"input": rows})["output"],
                                       rtol=1e-6, atol=1e-7, err_msg=str(i))
        (entry,) = runner.entries.values()
        executions = entry.executions[("torch", "1")]
        assert executions < len(asks)  # some callers shared a batch
        report = runner.batching.report()
        assert report["batch_rows"]["buckets"][-1][1] == executions
        assert report["batch_rows"]["sum"] == sum(len(rows) for rows in asks)
    finally:
        runner.stop()
        thread.join()
        started.client.close()


def test_a_model_set_off_the_runner_loads_in_the_worker(onnx_folders: dict[str, Path]) -> None:
    from flask_predict.models.runner_client import runner_loader
    from flask_predict.models.plugins import load_predictor_class
    from flask_predict.settings.model_config import parse_models

    (spec,) = parse_models({"torch": {"base_path": os.fspath(onnx_folders["torch"].parent),
                                      "runner": False}}, base_dir=None, origin="test")
    assert spec.runner is False
    proxy = type("Runner_onnx", (RunnerPredictor,), {"plugin": "onnx",
                                                       "client": RunnerClient("/nowhere")})
    loaded = runner_loader(load_predictor_class)(proxy, spec, 1, os.fspath(onnx_folders["torch"]))
    assert type(loaded) is ONNXPredictor
    with pytest.raises(Exception, match="'runner' must be true or false"):
        parse_models({"m": {"base_path": os.fspath(onnx_folders["torch"].parent),
                            "runner": "no"}}, base_dir=None, origin="test")
