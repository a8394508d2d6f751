"""Many models under real gunicorn with 3 sync workers: a lazy root of 200 small real
models (scikit-learn trees and XGBoost boosters trained here) under a per-worker cap that
holds about 20, asked in random order and checked against each model's own answers; a
model added while serving, loaded through V2's repository route and SageMaker's ``POST
/models``; concurrent first requests for one model loading it once per worker; a worker
killed with SIGKILL and a ``kill -HUP`` reload, after which the new workers load the lazy
models again on first use."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from flask_predict.models.lazy import files_bytes
from tests.e2e.server import GunicornServer, children, request
from tests.lazy_models import PROBES, train_forest_booster, train_tree

pytestmark = pytest.mark.e2e

WORKERS = 3
TREES, BOOSTERS = 160, 40
HELD = 20
"""The models the per-worker cap holds, by their files' mean size."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[float]]]:
    """The root's 200 models and each one's answers to the probes."""
    folder = tmp_path_factory.mktemp("root")
    answers = {f"tree{n}": train_tree(folder / f"tree{n}", n) for n in range(TREES)}
    answers.update({f"boost{n}": train_forest_booster(folder / f"boost{n}", n)
                    for n in range(BOOSTERS)})
    return folder, answers


@pytest.fixture(scope="module")
def server(root: tuple[Path, dict[str, list[float]]], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[GunicornServer, int]]:
    folder, _ = root
    pinned = tmp_path_factory.mktemp("pinned")
    train_tree(pinned / "pinned_tree", 99)
    train_forest_booster(pinned / "pinned_booster", 99)
    sizes = [files_bytes(str(folder / name)) for name in os.listdir(folder)]
    cap = HELD * sum(sizes) // len(sizes)
    models = {name: {"base_path": str(pinned / name)} for name in ("pinned_tree",
                                                                   "pinned_booster")}
    log = tmp_path_factory.mktemp("log") / "server.log"
    env = {"FLASK_PREDICT_LAZY_ROOT": str(folder), "FLASK_PREDICT_LAZY_MAX_BYTES": str(cap),
           "FLASK_PREDICT_MLFLOW_MULTI_MODEL": "true", "FLASK_PREDICT_POLL_SECONDS": "0.5",
           "FLASK_PREDICT_METRICS_PATH": "/metrics"}
    with GunicornServer(models, workers=WORKERS, env=env, log_path=log) as running:
        yield running, cap


def predict(server: GunicornServer, name: str) -> tuple[int, Any]:
    status, _, body = request("POST", f"{server.url}/v1/models/{name}:predict",
                              body={"instances": PROBES})
    return status, json.loads(body) if body else None


def check(name: str, got: Any, answers: dict[str, list[float]]) -> None:
    want = answers[name]
    rel = 1e-12 if name.startswith("tree") else 1e-6  # XGBoost computes in float32
    assert got["predictions"] == pytest.approx(want, rel=rel, abs=1e-12), name


def series(text: str, name: str) -> list[float]:
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith(name + " ") or line.startswith(name + "{")]


def test_random_requests_under_the_cap(server: tuple[GunicornServer, int],
                                       root: tuple[Path, dict[str, list[float]]]) -> None:
    running, cap = server
    _, answers = root
    names = list(answers) * 3
    random.Random(54).shuffle(names)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda name: (name, *predict(running, name)), names))
    for name, status, got in results:
        assert status == 200, (name, got)
        check(name, got, answers)
    pinned = predict(running, "pinned_tree")
    assert pinned[0] == 200
    _, _, text = request("GET", running.url + "/metrics")
    metrics = text.decode()
    held = series(metrics, "flask_predict_lazy_bytes")
    assert held and all(0 < value <= cap for value in held), (held, cap)
    assert sum(series(metrics, "flask_predict_lazy_evictions_total")) > 0
    assert max(series(metrics, "flask_predict_lazy_models")) <= HELD + 2
    assert sum(series(metrics, "flask_predict_lazy_misses_total")) >= len(answers)
    # an evicted model's series leave its worker's memory, its counts stay in the shared
    # files: each model's three requests are all counted, across workers and evictions
    time.sleep(2.5)  # each worker writes its counts once a second
    _, _, text = request("GET", running.url + "/metrics")
    counted: Counter[str] = Counter()
    for found in re.finditer(r'^flask_predict_requests_total\{code="200",model="([^"]+)",'
                             r'.*\} ([0-9.e+]+)$', text.decode(), re.M):
        counted[found.group(1)] += int(float(found.group(2)))
    assert {name: counted[name] for name in answers} == {name: 3 for name in answers}


def test_concurrent_first_requests_load_once_per_worker(
        server: tuple[GunicornServer, int], root: tuple[Path, dict[str, list[float]]]) -> None:
    running, _ = server
    folder, answers = root
    answers = {**answers, "burst": train_tree(folder / "burst", 1234)}
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: predict(running, "burst"), range(48)))
    for status, got in results:
        assert status == 200
        check("burst", got, answers)
    loads = re.findall(r"\[(\d+)\].*model 'burst': version 1 loaded on demand",
                       running.log_text())
    assert loads and max(Counter(loads).values()) == 1, loads


def test_a_model_added_while_serving_loads_through_both_routes(
        server: tuple[GunicornServer, int], root: tuple[Path, dict[str, list[float]]]) -> None:
    running, _ = server
    folder, answers = root
    late = train_tree(folder / "late_v2", 777)
    status, _, body = request("POST", f"{running.url}/v2/repository/models/late_v2/load")
    assert status == 200, body
    for _ in range(6):  # every worker: the one that loaded it, the others on first use
        got = predict(running, "late_v2")
        assert got[0] == 200
        check("late_v2", got[1], {"late_v2": late})
    sagemaker = train_forest_booster(folder / "hash-888" / "model", 888)
    status, _, body = request("POST", f"{running.url}/models", body={
        "model_name": "late_sm", "url": str(folder / "hash-888" / "model")})
    assert status == 200, body
    status, _, body = request("POST", f"{running.url}/models", body={
        "model_name": "late_sm", "url": str(folder / "hash-888" / "model")})
    assert status == 409, body  # added for every worker, whichever answers
    for _ in range(6):
        status, _, body = request("POST", f"{running.url}/models/late_sm/invoke",
                                  body={"instances": PROBES})
        assert status == 200, body
        check("boost", json.loads(body), {"boost": sagemaker})
    status, _, body = request("GET", f"{running.url}/models")
    assert json.loads(body)["models"] == [{"modelName": "late_sm",
                                           "modelUrl": str(folder / "hash-888" / "model")}]


def settled(server: GunicornServer, want: int = WORKERS, timeout: float = 60) -> set[int]:
    """The workers, once *want* of them are up and the server answers ready."""
    deadline = time.monotonic() + timeout
    assert server.process is not None
    while time.monotonic() < deadline:
        pids = children(server.process.pid)
        if len(pids) == want and request("GET", server.url + "/v2/health/ready")[0] == 200:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"workers {children(server.process.pid)} of {want}")


def test_a_killed_worker_and_a_reload_serve_the_lazy_models_again(
        server: tuple[GunicornServer, int], root: tuple[Path, dict[str, list[float]]]) -> None:
    running, _ = server
    _, answers = root
    names = sorted(a for a in answers if a.startswith(("tree", "boost")))[:20]

    def all_answer() -> None:
        with ThreadPoolExecutor(8) as pool:
            for name, (status, got) in zip(names * 3, pool.map(
                    lambda name: predict(running, name), names * 3)):
                assert status == 200, (name, got)
                check(name, got, answers)

    all_answer()
    before = settled(running)
    killed = min(before)
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while killed in children(running.process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = settled(running)
    assert killed not in after
    all_answer()  # the new worker loads them on first use
    running.reload()  # HUP: every worker replaced gracefully
    deadline = time.monotonic() + 60
    while children(running.process.pid) & after and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not settled(running) & after
    all_answer()
