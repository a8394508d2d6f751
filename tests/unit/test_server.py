"""server: what gunicorn's hooks delegate to (master checks, worker indices, readiness)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from flask_predict.readiness import ReadyMarks
from flask_predict.server import INDEX_ATTRIBUTE, assign_worker_index


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
