"""gunicorn's binary upgrade under ``flask-predict serve``, the signal sequence gunicorn
documents, under a steady client load: ``USR2`` to the master starts a new master (the same
command, executed again) with its own workers on the same sockets; ``TERM`` to the new one
backs the upgrade out, ``TERM`` to the old one completes it. No request fails, and the new
master answers ``TTIN``, ``TTOU`` and ``HUP`` as the first one did."""

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


def new_master(pidfile: Path, old: int) -> int | None:
    """The pid the upgrade's master wrote: gunicorn >= 20 writes ``<pidfile>.2`` (renamed to
    ``<pidfile>`` once the old master is gone); older ones renamed the old master's file to
    ``<pidfile>.oldbin`` and wrote ``<pidfile>``."""
    for path in (Path(f"{pidfile}.2"), pidfile):
        try:
            pid = int(path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            continue
        if pid and pid != old:
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
    """``USR2`` to *old*: the new master, once its workers answer requests."""
    os.kill(old, signal.SIGUSR2)
    wait_for(lambda: new_master(pidfile, old) is not None, "new master's pid file")
    new = new_master(pidfile, old)
    assert new is not None and new in children(old)
    # the new master's workers answer beside the old ones, on the same socket
    wait_for(lambda: len(children(new)) == WORKERS and any(
        whoami(server)[1] in children(new) for _ in range(20)), "an answer from the new workers")
    return new


def stop(pid: int) -> None:
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not alive(pid), f"{pid} stopped", timeout=60)


def test_usr2_backed_out_then_completed_fails_no_request(
        model_config: dict[str, dict[str, object]], tmp_path: Path) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps(model_config))
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
                stop(masters[-1])
                wait_for(lambda: children(old) == old_workers, "the new master reaped")
                answered_by(server, old_workers)
                # the upgrade: TERM to the old master, which stops its workers gracefully
                new = upgrade(server, pidfile, old)
                masters.append(new)
                new_workers = children(new)
                os.kill(old, signal.SIGTERM)
                server.process.wait(timeout=60)
                answered_by(server, new_workers)
                wait_for(lambda: pidfile.read_text().strip() == str(new),
                         "the new master promoted in the pid file")
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
