"""Model lifecycle under real gunicorn with 2 sync workers: versions and models picked up
from disk while serving, broken versions that never replace the served one, and
``kill -HUP`` reloads that let requests in flight finish. scikit-learn's iris is loaded once,
in the master (a new version replaces the workers one at a time); the custom model in each
worker."""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests import models
from tests.e2e.server import GunicornServer, request
from tests.traffic import Traffic

pytestmark = pytest.mark.e2e

POLL = 0.5
FLOWER = [5.1, 3.5, 1.4, 0.2]
V2_BODY = {"inputs": [{"name": "inputs", "datatype": "FP64", "shape": [1, 4], "data": FLOWER}]}

SLOW_PREDICTOR = '''
import os
import time


class SlowPredictor:
    """Sleeps ``sleep`` seconds when asked, and answers the pid of its worker; asked with
    ``started`` (a folder), it first writes a file named by its pid there, and with
    ``release`` (a file), it then waits until that file exists."""

    @classmethod
    def from_path(cls, model_dir):
        if os.path.exists(os.path.join(model_dir, "broken")):
            raise RuntimeError("this version refuses to load")
        return cls()

    def predict(self, instances, sleep=0, started=None, release=None):
        if started:
            open(os.path.join(started, str(os.getpid())), "w").close()
        while release and not os.path.exists(release):
            time.sleep(0.05)
        time.sleep(sleep)
        return [os.getpid() for _ in instances]
'''


def write_slow(base: Path, version: int, broken: bool = False) -> None:
    staging = base.parent / f".staging-{base.name}-{version}"
    staging.mkdir(parents=True)
    (staging / "slow.py").write_text(SLOW_PREDICTOR)
    if broken:
        (staging / "broken").write_text("")
    publish(staging, base / str(version))


def publish(staging: Path, target: Path) -> None:
    """Move a finished version folder into place: the atomic rename the docs ask for."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)


def write_config(path: Path, entries: dict[str, Any]) -> None:
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(entries))
    staging.replace(path)


def v2_version(server: GunicornServer) -> tuple[int, str | None]:
    status, _, data = request("POST", server.url + "/v2/models/iris/infer", body=V2_BODY)
    return status, json.loads(data).get("model_version") if status == 200 else None


def slow(server: GunicornServer, sleep: float = 0, **held: str) -> tuple[int, Any]:
    """One prediction of the slow model (*held*: its ``started`` and ``release``)."""
    status, _, data = request("POST", server.url + "/v1/projects/p/models/slow:predict",
                              body={"instances": [1], "sleep": sleep, **held}, timeout=90)
    return status, json.loads(data) if data else None


def pids(server: GunicornServer, want: int = 2, timeout: float = 60) -> set[int]:
    """The pids of the workers answering concurrent requests, until *want* have answered."""
    found: set[int] = set()
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(8) as pool:
        while len(found) < want and time.monotonic() < deadline:
            for status, body in pool.map(lambda _: slow(server), range(16)):
                assert status == 200, body
                found.update(body["predictions"])
    return found


def logged(server: GunicornServer, text: str, times: int, timeout: float = 30) -> None:
    """Wait until the server's log holds *text* *times* times (once per worker)."""
    deadline = time.monotonic() + timeout
    while server.log_text().count(text) < times:
        assert time.monotonic() < deadline, f"{text!r} not logged {times} times in {timeout}s"
        time.sleep(0.1)


def consecutive(check: Callable[[], bool], count: int = 20, timeout: float = 30) -> int:
    """Ask until *count* answers in a row pass *check*; return how many were asked."""
    asked = streak = 0
    deadline = time.monotonic() + timeout
    while streak < count:
        assert time.monotonic() < deadline, f"no {count} consecutive answers in {timeout}s"
        asked += 1
        streak = streak + 1 if check() else 0
    return asked


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[GunicornServer, Path]]:
    """iris (scikit-learn, version 1) and slow (custom) from a config file, polled every
    half second."""
    root = tmp_path / "models"
    models.train_iris(root / "iris")
    write_slow(root / "slow", 1)
    config = root / "models.json"
    write_config(config, {
        "iris": {"base_path": "iris"},
        "slow": {"base_path": "slow", "predictor": "custom", "class": "slow.SlowPredictor"},
    })
    env = {"FLASK_PREDICT_MODEL_CONFIG_FILE": str(config),
           "FLASK_PREDICT_POLL_SECONDS": str(POLL)}
    with GunicornServer(workers=2, env=env, log_path=tmp_path / "gunicorn.log") as server:
        yield server, root


def test_versions_and_models_follow_the_disk_in_every_worker(
        served: tuple[GunicornServer, Path], tmp_path: Path) -> None:
    server, root = served
    workers = pids(server)
    assert len(workers) == 2
    assert v2_version(server) == (200, "1")

    # a new version: every one of 20 consecutive requests is answered by it
    models.train_iris(tmp_path / "staging", version=2)
    with Traffic(lambda: v2_version(server)) as traffic:
        publish(tmp_path / "staging" / "2", root / "iris" / "2")
        consecutive(lambda: v2_version(server) == (200, "2"))
        # twenty answers in a row may all come from one worker: wait for the other too (each
        # worker that served it retires it as it is replaced)
        logged(server, "model 'iris': version 1 retired", 2)
    assert traffic.failed == [], "no request failed during the swap"
    status, _, data = request("GET", server.url + "/v2/models/iris")
    assert status == 200 and json.loads(data)["versions"] == ["2"]
    assert request("GET", server.url + "/v2/health/ready")[0] == 200

    # a broken version: version 2 goes on answering, no request fails
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.joblib").write_bytes(b"not a pickle")
    with Traffic(lambda: v2_version(server)) as traffic:
        publish(tmp_path / "broken", root / "iris" / "3")
        logged(server, "model 'iris' version 3 failed to load", 2)
        time.sleep(4 * POLL)
    assert traffic.answers and traffic.failed == []
    assert {version for _, version in traffic.answers} == {"2"}
    for _ in range(6):  # both workers know version 3 (404 if not) and it is not ready (400)
        assert request("GET", server.url + "/v2/models/iris/versions/3/ready")[0] == 400
        assert request("GET", server.url + "/v2/models/iris/versions/2/ready")[0] == 200
    assert request("GET", server.url + "/v2/health/ready")[0] == 200
    log = (tmp_path / "gunicorn.log").read_text()
    assert log.count("model 'iris' version 3 failed to load") == 2, "once per worker"
    for _ in range(4):  # grps metadata lists the failed version; the cause is the log's
        status, _, data = request("POST", server.url + "/grps/v1/metadata/model",
                                  body={"str_data": "iris"})
        text = json.loads(data)["str_data"]
        assert status == 200 and "failed_versions" in text
        assert "3: \"failed to load; the server's log has the cause\"" in text
        assert "pickle" not in text and str(root) not in text
    # the cause: in the master, which loads the shared iris, and once in each worker
    assert log.count("unreadable model file: cannot unpickle it") == 3

    # a custom version that raises in from_path: the workers stay alive and keep version 1
    workers = pids(server)
    write_slow(root / "slow", 2, broken=True)
    time.sleep(4 * POLL)
    assert pids(server) == workers, "no worker died or was replaced"
    assert slow(server)[0] == 200
    log = (tmp_path / "gunicorn.log").read_text()
    assert log.count("model 'slow' version 2 failed to load from "
                     f"{root / 'slow' / '2'}: RuntimeError: this version refuses to load") == 2

    # a model removed from the config file: 404 from every worker
    write_config(root / "models.json", {"iris": {"base_path": "iris"}})
    consecutive(lambda: slow(server)[0] == 404)
    logged(server, "model 'slow' removed from the configuration", 2)
    for _ in range(6):
        assert slow(server)[0] == 404
    assert v2_version(server) == (200, "2")


def test_tfserving_status_shows_versions_and_errors(
        served: tuple[GunicornServer, Path], tmp_path: Path) -> None:
    server, root = served
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.joblib").write_bytes(b"not a pickle")
    publish(tmp_path / "broken", root / "iris" / "2")

    def status_of_2() -> dict[str, Any]:
        status, _, data = request("GET", server.url + "/v1/models/iris")
        assert status == 200
        return {entry["version"]: entry for entry in json.loads(data)["model_version_status"]}

    # seen by every worker, and tried by each (a busy machine may still be LOADING it); the
    # entries checked are the last settled answer's: one more request may reach a worker
    # that none of the streak reached, still loading
    answers: list[dict[str, Any]] = []

    def settled() -> bool:
        answers.append(status_of_2())
        return answers[-1].get("2", {}).get("state") not in (None, "LOADING")

    consecutive(settled, count=10)
    entries = answers[-1]
    assert entries["1"]["state"] == "AVAILABLE"
    assert entries["2"]["state"] == "END"
    assert entries["2"]["status"] == {"error_code": "UNKNOWN", "error_message": (
        "failed to load; the server's log has the cause")}

    models.train_iris(tmp_path / "staging", version=3)
    publish(tmp_path / "staging" / "3", root / "iris" / "3")
    consecutive(lambda: status_of_2().get("3", {}).get("state") == "AVAILABLE")
    # the replaced version is UNLOADING until it is closed a poll later, then END
    consecutive(lambda: status_of_2()["1"]["state"] == "END")
    logged(server, "model 'iris': version 1 retired", 2)
    assert request("POST", server.url + "/v1/models/iris/versions/1:predict",
                   body={"instances": [FLOWER]})[0] == 404


def test_kill_hup_reloads_gracefully(served: tuple[GunicornServer, Path],
                                     tmp_path: Path) -> None:
    server, _ = served
    old = pids(server)
    started, release = tmp_path / "started", tmp_path / "release"
    started.mkdir()
    held = {"started": str(started), "release": str(release)}
    with ThreadPoolExecutor(2) as pool:
        in_flight = [pool.submit(slow, server, 0, **held) for _ in range(2)]
        deadline = time.monotonic() + 60
        while len(os.listdir(started)) < 2:  # both requests running, one in each worker
            assert time.monotonic() < deadline, "the two requests never both started"
            time.sleep(0.05)
        server.reload()
        new = pids(server)  # the new workers answer while the old ones hold a request each
        release.touch()
        answers = [future.result(timeout=60) for future in in_flight]
    assert [status for status, _ in answers] == [200, 200]
    assert {body["predictions"][0] for _, body in answers} == old
    assert len(new) == 2 and not new & old, "every worker was replaced"
    assert v2_version(server) == (200, "1")


def test_model_files_can_be_removed_after_load(served: tuple[GunicornServer, Path]) -> None:
    """Deleting a served model's whole folder keeps it served (the versions stay loaded)."""
    server, root = served
    shutil.rmtree(root / "iris")
    time.sleep(3 * POLL)
    assert consecutive(lambda: v2_version(server) == (200, "1"), count=10) == 10
