"""Models held once per machine under real gunicorn (``flask_predict.models.sharing``): a scikit-learn
KNN index and an XGBoost Booster load in the master, and every worker serves them from the
pages it shares with the master (read from ``/proc/<pid>/smaps_rollup``); new versions reach
every worker by replacing the workers one at a time, with no request failed and readiness
kept; a broken version keeps the old one; a respawned worker shares too; XGBoost predicts
on several OpenMP threads in workers forked from a master that loaded it."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import joblib
import numpy as np
import pytest
import xgboost as xgb
from sklearn.neighbors import KNeighborsClassifier

from tests import models
from tests.e2e.server import GunicornServer, children, load_benchmark, request, worker_pids
from tests.traffic import Traffic

pytestmark = pytest.mark.e2e
harness = load_benchmark("harness")

POLL = 0.5
FEATURES = 16
KNN_ROWS = 300_000
"""A KD-tree over 300,000 rows of 16 features: about 80 MiB, four times what a worker holds
privately beside it."""
ROWS = np.random.default_rng(7).normal(size=(64, FEATURES)).round(3)
FEW = ROWS[:4]
"""What the KNN is asked: in 16 dimensions a KD-tree query visits most of the index."""


def train_knn(base: Path, version: int = 1) -> Path:
    rng = np.random.default_rng(version)
    x = rng.normal(size=(KNN_ROWS, FEATURES))
    y = (x[:, 0] + x[:, 1] > 0).astype(int) + version  # each version's own labels
    folder = base.parent / f".{base.name}-{version}.tmp"
    folder.mkdir(parents=True)
    joblib.dump(KNeighborsClassifier(algorithm="kd_tree").fit(x, y), folder / "model.joblib")
    return publish(folder, base / str(version))


def train_xgb(base: Path, version: int = 1) -> Path:
    rng = np.random.default_rng(10 + version)
    x = rng.normal(size=(4000, FEATURES))
    y = (x[:, 2] - x[:, 3] > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": 1},
                        xgb.DMatrix(x, label=y), num_boost_round=150)
    folder = base.parent / f".{base.name}-{version}.tmp"
    folder.mkdir(parents=True)
    booster.save_model(folder / "model.json")
    return publish(folder, base / str(version))


def publish(staging: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)  # the atomic rename docs/lifecycle.md asks for
    return target


def private_mib(pid: int) -> float:
    """``Private_Clean + Private_Dirty`` of ``/proc/<pid>/smaps_rollup``, in MiB."""
    return float(harness.smaps_mib(pid)[1])


def predict(server: GunicornServer, model: str, rows: Any = ROWS) -> tuple[int, Any]:
    status, _, data = request("POST", server.url + f"/v1/projects/p/models/{model}:predict",
                              body={"instances": np.asarray(rows).tolist()})
    return status, json.loads(data) if data else None


def knn_version(server: GunicornServer) -> tuple[int, str | None]:
    status, _, data = request("POST", server.url + "/v2/models/knn/infer", body={
        "inputs": [{"name": "inputs", "datatype": "FP64", "shape": [1, FEATURES],
                    "data": ROWS[0].tolist()}]})
    return status, json.loads(data).get("model_version") if status == 200 else None


def every_worker(server: GunicornServer, check: Callable[[], bool], count: int = 30,
                 timeout: float = 90) -> None:
    """Until *count* answers in a row pass *check* (each worker answers some)."""
    streak, deadline = 0, time.monotonic() + timeout
    while streak < count:
        assert time.monotonic() < deadline, f"no {count} good answers in a row in {timeout}s"
        streak = streak + 1 if check() else 0


def settled_workers(server: GunicornServer, timeout: float = 90) -> set[int]:
    """The workers once the master runs exactly the configured number, all ready."""
    deadline = time.monotonic() + timeout
    assert server.process is not None
    while time.monotonic() < deadline:
        pids = children(server.process.pid)
        if len(pids) == server.workers and \
                request("GET", server.url + "/v2/health/ready")[0] == 200:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"the server did not settle on {server.workers} workers")


def assert_shared(server: GunicornServer, model_mib: float) -> None:
    """Each worker's private memory far below the model's size: its pages are the master's."""
    assert server.process is not None
    for pid in children(server.process.pid):
        private = private_mib(pid)
        assert private < model_mib / 2, f"worker {pid}: {private:.0f} MiB private"


def traffic(server: GunicornServer) -> Traffic:
    """Predictions of both models and readiness probes, in turn."""
    return Traffic(lambda: (knn_version(server)[0], "knn"),
                   lambda: (predict(server, "xgb", ROWS[:2])[0], "xgb"),
                   lambda: (request("GET", server.url + "/v2/health/ready")[0], "ready"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GunicornServer, Path]]:
    """knn (scikit-learn) and xgb (XGBoost), shared, and echo (custom, each worker's own),
    3 workers, folders polled every half second; one server for the module, whose tests run
    in order (the swap last)."""
    tmp_path = tmp_path_factory.mktemp("shared")
    root = tmp_path / "models"
    train_knn(root / "knn")
    train_xgb(root / "xgb")
    models.make_custom(root / "echo")
    entries = {"knn": {"base_path": str(root / "knn")},
               "xgb": {"base_path": str(root / "xgb")},
               "echo": {"base_path": str(root / "echo"), "predictor": "custom",
                        "class": "predictor.EchoPredictor"}}
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL), "FLASK_PREDICT_THREADS": "2"}
    with GunicornServer(entries, workers=3, env=env, log_path=tmp_path / "gunicorn.log",
                        timeout=180) as server:
        yield server, root


def knn_mib(root: Path) -> float:
    return os.path.getsize(root / "knn" / "1" / "model.joblib") / 2**20


def test_workers_share_the_masters_pages_and_answer_as_a_private_load(
        served: tuple[GunicornServer, Path]) -> None:
    server, root = served
    pids = worker_pids(server, 3, path="/v1/projects/p/models/echo:predict")
    assert len(pids) == 3
    for _ in range(12):  # every worker answers (and warms up) both shared models
        assert predict(server, "knn", FEW)[0] == 200 and predict(server, "xgb")[0] == 200
    assert_shared(server, knn_mib(root))
    assert "model 'knn': version 1 shared from the master" in server.log_text()

    # the same answers as the model loaded by this process, as each worker did before
    own_knn = joblib.load(root / "knn" / "1" / "model.joblib")
    own_xgb = xgb.Booster(model_file=str(root / "xgb" / "1" / "model.json"))
    for _ in range(6):
        status, body = predict(server, "knn", FEW)
        assert status == 200 and body["predictions"] == own_knn.predict(FEW).tolist()
        status, body = predict(server, "xgb")
        expected = own_xgb.inplace_predict(ROWS.astype(np.float32))
        assert status == 200 and np.array_equal(
            np.asarray(body["predictions"], dtype=np.float32), expected)


def test_xgboost_predicts_on_several_threads_in_forked_workers(
        served: tuple[GunicornServer, Path]) -> None:
    """libgomp hangs a forked child's parallel region when the parent ran one on a pool:
    the master loaded XGBoost (and checked it on sample rows) on one thread, so each worker
    runs its own pool of FLASK_PREDICT_THREADS."""
    server, _ = served
    assert server.process is not None
    rows = np.random.default_rng(3).normal(size=(5000, FEATURES)).round(3)
    for _ in range(6):
        status, body = predict(server, "xgb", rows)
        assert status == 200 and len(body["predictions"]) == 5000
    threads = {pid: len(os.listdir(f"/proc/{pid}/task")) for pid in children(server.process.pid)}
    assert any(count >= 2 for count in threads.values()), threads


def test_a_respawned_worker_shares_too(served: tuple[GunicornServer, Path]) -> None:
    server, root = served
    before = settled_workers(server)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while victim in children(server.process.pid if server.process else 0):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    after = settled_workers(server)
    (respawned,) = after - before
    for _ in range(12):
        assert predict(server, "knn", FEW)[0] == 200
    assert private_mib(respawned) < knn_mib(root) / 2


def test_new_version_reaches_every_worker_shared_with_no_failed_request(
        served: tuple[GunicornServer, Path], tmp_path: Path) -> None:
    server, root = served
    before = settled_workers(server)
    with traffic(server) as sent:
        train_knn(root / "knn", version=2)
        every_worker(server, lambda: knn_version(server) == (200, "2"))
        after = settled_workers(server)
    assert sent.answers and sent.failed == [], "no request failed, readiness held"
    assert not after & before, "every worker was replaced by one that inherits version 2"
    assert_shared(server, knn_mib(root))
    status, _, data = request("GET", server.url + "/v1/models/knn")
    states = {e["version"]: e["state"] for e in json.loads(data)["model_version_status"]}
    assert status == 200 and states == {"1": "END", "2": "AVAILABLE"}

    # a broken version: version 2 answers on, the failure shows in every worker's status,
    # and no worker is replaced (nothing served changed)
    before = settled_workers(server)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.joblib").write_bytes(b"not a pickle")
    with traffic(server) as sent:
        publish(tmp_path / "broken", root / "knn" / "3")

        def failed_everywhere() -> bool:
            return request("GET", server.url + "/v2/models/knn/versions/3/ready")[0] == 400
        every_worker(server, failed_everywhere)
    assert sent.answers and sent.failed == []
    assert server.process is not None and children(server.process.pid) == before
    assert knn_version(server) == (200, "2")
    failed = "model 'knn' version 3 failed to load"
    deadline = time.monotonic() + 30  # a worker logs it once it has read the failure
    while server.log_text().count(failed) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    log = server.log_text()
    assert "model 'knn' version 3: not loaded in the master" in log, "tried once, there"
    assert log.count(failed) == 3, "logged once per worker"
