"""gunicorn's binary upgrade under ``flask-predict serve``, the signal sequence gunicorn
documents, under a steady client load: ``USR2`` to the master starts a new master (the same
command, executed again) with its own workers on the same sockets; ``TERM`` to the new one
backs the upgrade out, ``TERM`` to the old one completes it. No request fails, the new
server's workers take no request while they load (the old ones serve), and the new master
answers ``TTIN``, ``TTOU`` and ``HUP`` as the first one did."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.e2e.server import CliServer, children, request
from tests.e2e.test_cli_serve import flask_predict
from tests.e2e.test_process_model_gunicorn import routine_entry, write_routine
from tests.traffic import Traffic

pytestmark = pytest.mark.e2e

WORKERS = 3


def wait_for(check: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout}s"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie, exited and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip() or 0) or None
    except (FileNotFoundError, ValueError):  # not written yet, or being renamed
        return None


def new_master(pidfile: Path, old: int) -> int | None:
    """The pid the upgrade's master wrote: gunicorn >= 20 writes ``<pidfile>.2`` (renamed to
    ``<pidfile>`` once the old master is gone); older ones renamed the old master's file to
    ``<pidfile>.oldbin`` and wrote ``<pidfile>``."""
    for path in (Path(f"{pidfile}.2"), pidfile):
        pid = read_pid(path)
        if pid is not None and pid != old:
            return pid
    return None


def whoami(server: CliServer) -> tuple[int, object]:
    """The pid of the worker that answered (the custom ``echo`` model's ``whoami``)."""
    status, _, body = request("POST", server.url + "/v1/projects/p/models/echo:predict",
                              body={"instances": [1], "whoami": True})
    return status, json.loads(body)["predictions"][0] if status == 200 else body


def iris(server: CliServer) -> tuple[int, object]:
    status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                              body={"instances": [[5.1, 3.5, 1.4, 0.2]]})
    return status, body


def answered_by(server: CliServer, workers: set[int], count: int = 20) -> None:
    """Until *count* answers in a row come from *workers*."""
    streak, deadline = 0, time.monotonic() + 120
    while streak < count:
        assert time.monotonic() < deadline, f"no {count} answers in a row from {workers}"
        status, pid = whoami(server)
        assert status == 200, pid
        streak = streak + 1 if pid in workers else 0


def serving(master: int, count: int = WORKERS) -> set[int]:
    """*master*'s workers, once it runs *count* of them."""
    wait_for(lambda: len(children(master)) == count, f"{count} workers of {master}")
    return children(master)


def upgrade(server: CliServer, pidfile: Path, old: int) -> int:
    """``USR2`` to *old*: the new master, once it runs its workers."""
    os.kill(old, signal.SIGUSR2)
    wait_for(lambda: new_master(pidfile, old) is not None, "new master's pid file")
    new = new_master(pidfile, old)
    assert new is not None and new in children(old)
    serving(new)
    return new


def served_by_both(server: CliServer, old: set[int], new: set[int]) -> None:
    """Until both servers' workers answer, on the same socket."""
    seen: set[object] = set()

    def both() -> bool:
        seen.update(whoami(server)[1] for _ in range(10))
        return bool(seen & old) and bool(seen & new)

    wait_for(both, "answers from both servers")


def stop(pid: int) -> None:
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not alive(pid), f"{pid} stopped", timeout=60)


def test_usr2_backed_out_then_completed_fails_no_request(
        model_config: dict[str, dict[str, object]], tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # while it is missing, a load of the "own" model waits
    gate.touch()
    write_routine(tmp_path / "own", 1, 1.0, gate)
    config = tmp_path / "models.json"
    config.write_text(json.dumps({**model_config,
                                  "own": routine_entry(tmp_path / "own", shared=False)}))
    pidfile = tmp_path / "gunicorn.pid"
    flags = ["--model_config_file", str(config), "--bind", "127.0.0.1:{port}"]
    server = CliServer(flask_predict(), flags, tmp_path, workers=WORKERS,
                       env={"GUNICORN_CMD_ARGS": f"--pid {pidfile}"},
                       log_path=tmp_path / "log", timeout=180)
    masters: list[int] = []
    with server:
        assert server.process is not None
        old = server.process.pid
        old_workers = serving(old)
        try:
            with Traffic(lambda: whoami(server), lambda: iris(server)) as sent, \
                    Traffic(lambda: iris(server), lambda: whoami(server)) as also:
                # backing out: TERM to the new master leaves the old one as it was
                masters.append(upgrade(server, pidfile, old))
                served_by_both(server, old_workers, children(masters[-1]))
                stop(masters[-1])
                wait_for(lambda: children(old) == old_workers, "the new master reaped")
                answered_by(server, old_workers)
                # the upgrade, its workers' own load held at the gate: they take nothing
                gate.unlink()
                new = upgrade(server, pidfile, old)
                masters.append(new)
                new_workers = children(new)
                wait_for(lambda: all(f"[{pid}] [INFO] loading model 'own'" in server.log_text()
                                     for pid in new_workers), "the new workers at the gate")
                for _ in range(40):  # a request taken by a loading worker would wait
                    status, pid = whoami(server)
                    assert status == 200 and pid in old_workers, pid
                gate.touch()
                served_by_both(server, old_workers, new_workers)
                # TERM to the old master, which stops its workers gracefully
                os.kill(old, signal.SIGTERM)
                server.process.wait(timeout=60)
                answered_by(server, new_workers)
                wait_for(lambda: read_pid(pidfile) == new, "the new master promoted in the "
                         "pid file")
            answers = sent.answers + also.answers
            assert len(answers) > 100 and sent.failed + also.failed == []
            assert {pid for status, pid in sent.answers if isinstance(pid, int)} & new_workers
            assert request("GET", server.url + "/v2/health/ready")[0] == 200
            # the new master answers the signals the first one did
            os.kill(new, signal.SIGTTIN)
            serving(new, WORKERS + 1)
            os.kill(new, signal.SIGTTOU)
            before = serving(new, WORKERS)
            os.kill(new, signal.SIGHUP)
            wait_for(lambda: not children(new) & before and len(children(new)) == WORKERS,
                     "every worker replaced")
            wait_for(lambda: request("GET", server.url + "/v2/health/ready")[0] == 200,
                     "readiness after the reload")
            assert iris(server)[0] == 200
        finally:
            for master in masters:
                stop(master)
    log = server.log_text()
    assert "No module named" not in log and "Error:" not in log, log[-3000:]


def test_a_new_master_that_cannot_start_leaves_the_old_one_serving(
        model_config: dict[str, dict[str, object]], tmp_path: Path) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps(model_config))
    flags = ["--model_config_file", str(config), "--bind", "127.0.0.1:{port}"]
    server = CliServer(flask_predict(), flags, tmp_path, workers=2,
                       log_path=tmp_path / "log", timeout=180)
    with server:
        assert server.process is not None
        old = server.process.pid
        old_workers = serving(old, 2)
        with Traffic(lambda: whoami(server), lambda: iris(server)) as sent:
            broken = tmp_path / "models.json.new"  # a model whose folder is gone
            broken.write_text(json.dumps({**model_config, "ghost": {
                "base_path": str(tmp_path / "missing")}}))
            broken.rename(config)
            os.kill(old, signal.SIGUSR2)
            wait_for(lambda: "configuration error" in server.log_text(), "the new master's "
                     "configuration error")
            wait_for(lambda: children(old) == old_workers, "the new master gone")
            answered_by(server, old_workers)
        assert sent.answers and sent.failed == []
        assert "is not a directory" in server.log_text()
