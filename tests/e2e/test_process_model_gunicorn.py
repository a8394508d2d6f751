"""The process model under what gunicorn operators do, on real gunicorn with several workers:
versions in two frameworks (the master never imports TensorFlow), ``HUP``, ``TTIN`` and
``TTOU`` during and outside rollouts (the pool returns to the count asked for, readiness
follows it), a shared version's ``close()`` under load (closed after the last worker that
held it), a master whose load blocks (its arbiter still replaces, forks and stops), a
replacement worker that loads while another one serves (it takes no request meanwhile) and
``max_requests`` recycling.

Loads that must last are held by a gate: the version's ``from_path`` waits while a file is
missing, so each case is decided by what happens before the gate opens, not by a clock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.e2e.server import GunicornServer, children, request
from tests.models import train_iris
from tests.traffic import Traffic

pytestmark = pytest.mark.e2e

POLL = 0.3
TESTDATA = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "tfserving"

ROUTINE = '''
"""A custom predictor for the process-model tests: its load waits while the file its
config.json names as "gate" is missing; it answers the number in its version folder's
value.txt (read on every call, so a version closed under a request would fail it), and its
close() deletes that file when config.json says "close_deletes"."""
import json
import os
import time


class Routine:
    def __init__(self, model_dir):
        self.value_file = os.path.join(model_dir, "value.txt")

    @classmethod
    def from_path(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            gate = json.load(f).get("gate")
        while gate and not os.path.exists(gate):
            time.sleep(0.05)
        return cls(model_dir)

    def predict(self, instances, **kwargs):
        with open(self.value_file) as f:
            value = float(f.read())
        return [[value, os.getpid()] for _ in instances]

    def close(self):
        with open(os.path.join(os.path.dirname(self.value_file), "config.json")) as f:
            if json.load(f).get("close_deletes"):
                os.unlink(self.value_file)
'''


def write_routine(base: Path, version: int, value: float, gate: Path | None = None,
                  close_deletes: bool = False) -> Path:
    """Version *version* of a routine model, staged and renamed into place; with
    *close_deletes*, its ``close()`` deletes the file its ``predict`` reads."""
    staging = base.parent / f".{base.name}-{version}"
    staging.mkdir(parents=True)
    (staging / "predictor.py").write_text(textwrap.dedent(ROUTINE))
    (staging / "value.txt").write_text(str(value))
    (staging / "config.json").write_text(json.dumps({"gate": str(gate) if gate else None,
                                                     "close_deletes": close_deletes}))
    base.mkdir(parents=True, exist_ok=True)
    staging.rename(base / str(version))
    return base / str(version)


def routine_entry(base: Path, shared: bool) -> dict[str, Any]:
    return {"base_path": str(base), "predictor": "custom", "class": "predictor.Routine",
            "shared": shared}


def ask(server: GunicornServer, model: str, timeout: float = 30) -> tuple[int, Any]:
    """One prediction of a routine model: (status, [value, pid]) or (status, body)."""
    status, _, data = request("POST", server.url + f"/v1/projects/p/models/{model}:predict",
                              body={"instances": [1]}, timeout=timeout)
    body = json.loads(data) if data else None
    return status, body["predictions"][0] if status == 200 else body


def ready(server: GunicornServer) -> int:
    return request("GET", server.url + "/v2/health/ready", timeout=10)[0]


def settle(server: GunicornServer, count: int, timeout: float = 120) -> set[int]:
    """The workers once the master runs exactly *count*, and the server reads ready."""
    assert server.process is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = children(server.process.pid)
        if len(pids) == count and ready(server) == 200:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"not {count} ready workers after {timeout}s: "
                         f"{len(children(server.process.pid))} workers, ready {ready(server)}")


def wait_for(check: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout}s"
        time.sleep(0.05)


def streak(check: Callable[[], bool], what: str, count: int = 30, timeout: float = 90) -> None:
    """Until *count* answers in a row pass *check* (every worker answers some)."""
    passed, deadline = 0, time.monotonic() + timeout
    while passed < count:
        assert time.monotonic() < deadline, f"no {count} answers in a row with {what}"
        passed = passed + 1 if check() else 0


def signal_master(server: GunicornServer, number: int) -> None:
    assert server.process is not None
    os.kill(server.process.pid, number)


def master_maps(server: GunicornServer) -> str:
    assert server.process is not None
    return Path(f"/proc/{server.process.pid}/maps").read_text()


# --- versions in two frameworks ------------------------------------------------------------------

@pytest.mark.tensorflow
def test_a_version_in_another_framework_loads_in_the_workers(tmp_path: Path) -> None:
    """Version 1 scikit-learn (the master's), version 2 a TensorFlow SavedModel: the master
    never imports TensorFlow, every worker serves version 2 (loaded in the runner) and
    answers, also after a reload and a worker's death (workers forked from that master do
    not hang)."""
    root = tmp_path / "models"
    train_iris(root / "mixed")
    models = {"mixed": {"base_path": str(root / "mixed")}}
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    with GunicornServer(models, workers=2, env=env, log_path=tmp_path / "log",
                        timeout=180) as server:
        url = server.url + "/v1/models/mixed:predict"
        status, _, data = request("POST", url, body={"instances": [[5.1, 3.5, 1.4, 0.2]]})
        assert status == 200 and json.loads(data)["predictions"][0]["predict"] == 0
        staging = root / ".mixed-2"
        shutil.copytree(TESTDATA / "saved_model_half_plus_two_cpu" / "00000123", staging)
        staging.rename(root / "mixed" / "2")

        def half_plus_two() -> bool:
            status, _, data = request("POST", url, body={"instances": [1.0, 2.0]})
            return status == 200 and json.loads(data) == {"predictions": [2.5, 3.0]}
        # each worker loads version 2 itself, one after the other on a busy machine
        streak(half_plus_two, "version 2 in every worker", count=10, timeout=120)
        settle(server, 2)
        assert "tensorflow" not in master_maps(server)
        assert "loaded with TensorFlowPredictor" in server.log_text()
        for number in (signal.SIGHUP, signal.SIGKILL):
            before = settle(server, 2)
            if number == signal.SIGHUP:
                signal_master(server, number)
            else:
                os.kill(min(before), number)
            wait_for(lambda: not (children(server.process.pid) & before)
                     if number == signal.SIGHUP else min(before) not in
                     children(server.process.pid), "the workers replaced")
            settle(server, 2)
            for _ in range(10):
                assert half_plus_two()
        assert "tensorflow" not in master_maps(server)
        assert "WORKER TIMEOUT" not in server.log_text()


# --- the pool: HUP, TTIN, TTOU, rollouts --------------------------------------------------------

@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GunicornServer, Path]]:
    """3 workers: iris (shared) and a routine each worker loads itself (its gate open)."""
    tmp_path = tmp_path_factory.mktemp("pool")
    root = tmp_path / "models"
    train_iris(root / "iris")
    gate = tmp_path / "gate"
    gate.touch()
    write_routine(root / "own", 1, 1.0, gate)
    models = {"iris": {"base_path": str(root / "iris")},
              "own": routine_entry(root / "own", shared=False)}
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    with GunicornServer(models, workers=3, env=env, log_path=tmp_path / "log",
                        timeout=180) as server:
        yield server, root


def new_iris_version(root: Path, version: int) -> None:
    staging = root / f".iris-{version}"
    train_iris(staging, version=1)
    (staging / "1").rename(root / "iris" / str(version))
    staging.rmdir()


def during_a_rollout(server: GunicornServer, root: Path, version: int) -> None:
    """Start a rollout (a new shared version) and return once its extra worker runs."""
    assert server.process is not None
    new_iris_version(root, version)
    wait_for(lambda: len(children(server.process.pid)) > 3, "the rollout's extra worker")


def iris_version(server: GunicornServer) -> str | None:
    status, _, data = request("POST", server.url + "/v2/models/iris/infer", body={
        "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 4],
                    "data": [5.1, 3.5, 1.4, 0.2]}]})
    return json.loads(data).get("model_version") if status == 200 else None


def iris_status(server: GunicornServer) -> int:
    return request("POST", server.url + "/v1/projects/p/models/iris:predict",
                   body={"instances": [[5.1, 3.5, 1.4, 0.2]]})[0]


def test_ttou_and_ttin_leave_the_server_ready(pooled: tuple[GunicornServer, Path]) -> None:
    server, _ = pooled
    settle(server, 3)
    signal_master(server, signal.SIGTTOU)
    settle(server, 2)  # readiness counts against the count wanted now, not the one at start
    signal_master(server, signal.SIGTTIN)
    settle(server, 3)


def test_a_reload_during_a_rollout_keeps_the_count(pooled: tuple[GunicornServer, Path]) -> None:
    server, root = pooled
    settle(server, 3)
    during_a_rollout(server, root, 2)
    signal_master(server, signal.SIGHUP)
    settle(server, 3)
    wait_for(lambda: iris_version(server) == "2", "version 2")
    time.sleep(3 * POLL)  # nothing left to undo the count
    settle(server, 3)
    new_iris_version(root, 3)  # a later rollout, after the reload
    wait_for(lambda: iris_version(server) == "3", "version 3")
    settle(server, 3)


def test_an_operators_ttin_during_a_rollout_stays(pooled: tuple[GunicornServer, Path]) -> None:
    server, root = pooled
    settle(server, 3)
    during_a_rollout(server, root, 4)
    signal_master(server, signal.SIGTTIN)
    wait_for(lambda: iris_version(server) == "4", "version 4")
    settle(server, 4)
    time.sleep(3 * POLL)
    settle(server, 4)
    signal_master(server, signal.SIGTTOU)
    settle(server, 3)


def test_a_reload_outside_a_rollout(pooled: tuple[GunicornServer, Path]) -> None:
    server, _ = pooled
    before = settle(server, 3)
    signal_master(server, signal.SIGHUP)
    wait_for(lambda: not children(server.process.pid) & before  # type: ignore[union-attr]
             , "every worker replaced")
    settle(server, 3)


# --- a shared version closed under load ----------------------------------------------------------

def test_a_replaced_shared_version_closes_after_its_last_worker(tmp_path: Path) -> None:
    root = tmp_path / "models"
    first = write_routine(root / "shared", 1, 1.0, close_deletes=True)
    models = {"shared": routine_entry(root / "shared", shared=True)}
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    with GunicornServer(models, workers=3, env=env, log_path=tmp_path / "log",
                        timeout=180) as server:
        with Traffic(lambda: ask(server, "shared"), lambda: (ready(server), "ready")) as sent:
            second = write_routine(root / "shared", 2, 2.0, close_deletes=True)
            streak(lambda: ask(server, "shared")[1][0] == 2.0, "version 2 everywhere")
        assert sent.answers and sent.failed == []
        wait_for(lambda: not (first / "value.txt").exists(), "version 1 closed")
        assert (second / "value.txt").exists()
    assert not (second / "value.txt").exists(), "closed when the master exits"


# --- a load that does not end --------------------------------------------------------------------

def test_the_arbiter_never_waits_on_a_load(tmp_path: Path) -> None:
    """While the master's load of a shared version waits at its gate: a killed worker is
    replaced and serves, an operator's TTIN forks, and a SIGTERM stops the server."""
    root = tmp_path / "models"
    gate = tmp_path / "gate"
    gate.touch()
    write_routine(root / "slow", 1, 1.0, gate)
    models = {"slow": routine_entry(root / "slow", shared=True)}
    env = {"FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    server = GunicornServer(models, workers=2, env=env, log_path=tmp_path / "log",
                            timeout=180)
    with server:
        assert server.process is not None
        before = settle(server, 2)
        gate.unlink()
        write_routine(root / "slow", 2, 2.0, gate)
        wait_for(lambda: "loading model 'slow' version 2" in server.log_text(), "the load")
        os.kill(min(before), signal.SIGKILL)
        wait_for(lambda: min(before) not in children(server.process.pid),  # type: ignore
                 "the killed worker reaped")
        after = settle(server, 2)
        assert min(before) not in after
        for _ in range(10):
            assert ask(server, "slow")[1][0] == 1.0
        signal_master(server, signal.SIGTTIN)
        settle(server, 3)
        signal_master(server, signal.SIGTERM)
        server.process.wait(timeout=60)  # long before the gate opens: it never does
        assert not gate.exists()
        assert "shared models loaded" in server.log_text()


# --- a loading worker takes no request another one can serve ------------------------------------

def test_a_loading_worker_accepts_nothing_while_another_serves(tmp_path: Path) -> None:
    """The replacement of a killed worker loads a model of its own (held at its gate): every
    request meanwhile, for that very model too, is answered at once by the ready worker."""
    root = tmp_path / "models"
    gate = tmp_path / "gate"
    gate.touch()
    write_routine(root / "own", 1, 1.0, gate)
    train_iris(root / "iris")
    models = {"own": routine_entry(root / "own", shared=False),
              "iris": {"base_path": str(root / "iris")}}
    with GunicornServer(models, workers=2, log_path=tmp_path / "log", timeout=180) as server:
        assert server.process is not None
        before = settle(server, 2)
        gate.unlink()
        victim, survivor = sorted(before)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(children(server.process.pid) - before) == 1, "the replacement")
        for _ in range(40):  # a request held by the loading worker would wait at the gate
            status, answer = ask(server, "own", timeout=20)
            assert status == 200 and answer == [1.0, survivor]
            assert ready(server) in (200, 400)  # V2: not ready is 400
        gate.touch()
        after = settle(server, 2)
        wait_for(lambda: {ask(server, "own")[1][1] for _ in range(20)} == after,
                 "both workers answering")


# --- gunicorn's max_requests ----------------------------------------------------------------------

def test_max_requests_recycles_workers_without_a_failed_request(tmp_path: Path) -> None:
    root = tmp_path / "models"
    train_iris(root / "iris")
    write_routine(root / "own", 1, 1.0)
    models = {"iris": {"base_path": str(root / "iris")},
              "own": routine_entry(root / "own", shared=False)}
    env = {"GUNICORN_CMD_ARGS": "--max-requests 25 --max-requests-jitter 5"}
    with GunicornServer(models, workers=2, env=env, log_path=tmp_path / "log",
                        timeout=180) as server:
        before = settle(server, 2)
        with Traffic(lambda: ask(server, "own"), lambda: (iris_status(server), "iris")) as sent:
            assert server.process is not None
            wait_for(lambda: not children(server.process.pid) & before, "recycled workers")
        assert sent.answers and sent.failed == []
        settle(server, 2)
