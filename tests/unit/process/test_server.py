"""server: what gunicorn's hooks delegate to (master checks, worker indices, readiness)."""

from __future__ import annotations

import os
import queue
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import gunicorn
import pytest

from flask_predict.process.readiness import ReadyMarks, any_marked
from flask_predict.process.server import (INDEX_ATTRIBUTE, STATE_DIR_VARIABLE,
                                          UPGRADED_FROM_VARIABLE, assign_worker_index,
                                          hand_over, keep_upgrades_importable)
from flask_predict.process.worker_hooks import honour_early_stop


def test_a_respawned_worker_takes_the_index_its_dead_predecessor_freed() -> None:
    arbiter = SimpleNamespace(WORKERS={})
    for pid in (101, 102, 103):
        worker = SimpleNamespace()
        assert assign_worker_index(arbiter, worker) == len(arbiter.WORKERS)
        arbiter.WORKERS[pid] = worker
    del arbiter.WORKERS[102]  # worker 1 died; gunicorn forks a replacement
    replacement = SimpleNamespace()
    assert assign_worker_index(arbiter, replacement) == 1
    arbiter.WORKERS[104] = replacement
    assert sorted(getattr(w, INDEX_ATTRIBUTE) for w in arbiter.WORKERS.values()) == [0, 1, 2]


def test_readiness_needs_as_many_ready_workers_as_the_server_runs(tmp_path: Path) -> None:
    marks = ReadyMarks(tmp_path, workers=2)
    marks.mark(101, True)
    assert not marks.all_ready()
    marks.mark(102, True)
    assert marks.all_ready() and marks.is_ready(102)
    marks.mark(102, False)  # worker 102 died (child_exit) or lost its models
    assert not marks.all_ready()
    # a rolling replacement: a third worker is ready before an old one leaves
    marks.mark(102, True)
    marks.mark(103, True)
    marks.mark(101, False)
    assert marks.all_ready()
    marks.clear()  # a server starting
    assert not marks.all_ready() and not marks.is_ready(103)


def test_readiness_counts_against_the_count_wanted_now(tmp_path: Path) -> None:
    marks = ReadyMarks(tmp_path, workers=4)
    for pid in (101, 102, 103):
        marks.mark(pid, True)
    assert not marks.all_ready() and marks.wanted == 4
    marks.want(3)  # the master after a TTOU
    assert ReadyMarks(tmp_path, workers=4).all_ready(), "every worker reads it"
    marks.want(5)  # after two TTIN
    assert not marks.all_ready()
    assert marks.any_ready(besides=101) and not ReadyMarks(tmp_path / "x", 1).any_ready(1)


def test_a_stop_signal_before_the_workers_own_handlers_ends_it(tmp_path: Path) -> None:
    """A TERM that the master's handler queued in a just-forked worker, or one arriving
    before gunicorn sets the worker's handlers, ends that worker at once."""
    for queued, sent in ((signal.SIGTERM, None), (None, signal.SIGTERM),
                         (signal.SIGTTIN, None)):
        pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        if queued is not None:
            pending.put(queued)
        pid = os.fork()
        if pid == 0:  # the worker
            honour_early_stop(SimpleNamespace(SIG_QUEUE=pending))
            if sent is not None:
                os.kill(os.getpid(), sent)
                time.sleep(5)
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        expected = 7 if queued == signal.SIGTTIN else 0
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == expected


def test_an_upgrade_of_a_module_started_master_runs_the_module_again() -> None:
    """``kill -USR2`` re-executes ``sys.executable`` with the master's ``sys.argv``: under
    ``python -m gunicorn`` that names gunicorn's ``__main__.py``, whose folder (with
    gunicorn's ``http`` package) must not lead the new master's ``sys.path``."""
    main = os.path.join(os.path.dirname(gunicorn.__file__), "__main__.py")
    flags = ["-c", "python:flask_predict.gunicorn_config", "flask_predict.wsgi:app"]
    arbiter = SimpleNamespace(START_CTX={"args": [sys.executable, main, *flags], "cwd": "/",
                                         0: sys.executable})
    keep_upgrades_importable(arbiter)
    assert arbiter.START_CTX["args"] == [sys.executable, "-m", "gunicorn", *flags]
    script = [sys.executable, "/venv/bin/gunicorn", *flags]  # the console script: as it is
    arbiter.START_CTX["args"] = list(script)
    keep_upgrades_importable(arbiter)
    assert arbiter.START_CTX["args"] == script


def test_an_upgrades_new_master_is_handed_the_old_servers_state_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_DIR_VARIABLE, str(tmp_path))  # made by the master at start
    arbiter = SimpleNamespace(cfg=SimpleNamespace(env_orig={}))
    hand_over(arbiter)
    assert arbiter.cfg.env_orig == {UPGRADED_FROM_VARIABLE: str(tmp_path)}
    assert not any_marked(tmp_path)
    ReadyMarks(tmp_path, workers=2).mark(101, True)
    assert any_marked(tmp_path)
    assert not any_marked(tmp_path / "gone") and not (tmp_path / "gone").exists()
    # a folder the operator set: both servers share it already
    operators = SimpleNamespace(cfg=SimpleNamespace(env_orig={STATE_DIR_VARIABLE: str(tmp_path)}))
    hand_over(operators)
    assert UPGRADED_FROM_VARIABLE not in operators.cfg.env_orig
