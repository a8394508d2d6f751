"""Shared state: flags and metrics that several processes of one server see alike."""

from __future__ import annotations

import multiprocessing
import os
import time
import warnings
from pathlib import Path

import pytest

from flask_predict import server
from flask_predict.shared_state import (LATENCY_BUCKETS_MS, SECONDS_KEPT, RequestMetrics,
                                        SharedFlag, StateDir)


def test_first_opener_sets_the_initial_value(tmp_path: Path) -> None:
    first = SharedFlag(tmp_path / "f.flag", initial=False)
    later = SharedFlag(tmp_path / "f.flag", initial=True)
    assert first.get() is False and later.get() is False
    later.set(True)
    assert first.get() is True
    first.set(False)
    assert later.get() is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.flag"]  # no temp files left


def test_flag_without_its_file_reads_the_initial_value(tmp_path: Path) -> None:
    flag = SharedFlag(tmp_path / "f.flag", initial=True)
    (tmp_path / "f.flag").unlink()
    assert flag.get() is True


def _child(folder: str, flag_path: str) -> None:
    metrics = RequestMetrics(Path(folder))
    for _ in range(5):
        metrics.record(0.003, failed=False)
    metrics.record(2.0, failed=True)
    SharedFlag(Path(flag_path), initial=True).set(False)


def test_another_process_sees_the_same_state(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    flag = state.flag("online", initial=True)
    metrics = state.metrics("metrics")
    metrics.record(0.010, failed=False)
    child = multiprocessing.get_context("spawn").Process(
        target=_child, args=(str(metrics.folder), str(flag.path)))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert flag.get() is False
    snapshot = metrics.snapshot()
    assert snapshot.workers == 2
    assert (snapshot.requests, snapshot.failed) == (7, 1)
    assert snapshot.latency_max_ms == pytest.approx(2000.0)
    assert snapshot.latency_sum_ms == pytest.approx(10 + 15 + 2000)
    assert snapshot.fail_rate == pytest.approx(100 / 7)
    assert sum(snapshot.histogram) == 7
    assert snapshot.latency_percentile_ms(50) == 5  # 3 ms falls in the (2, 5] bucket
    assert snapshot.latency_percentile_ms(100) == 2000


def test_per_second_buckets_feed_the_qps(tmp_path: Path) -> None:
    metrics = RequestMetrics(tmp_path)
    for _ in range(4):
        metrics.record(0.001, failed=False)
    time.sleep(max(0.0, 1.05 - (time.time() % 1)))  # let that second complete
    snapshot = metrics.snapshot()
    assert len(snapshot.per_second) == SECONDS_KEPT
    assert snapshot.per_second[-1][1] == 4
    assert snapshot.qps(seconds=2) == 2.0
    assert snapshot.latency_percentile_ms(99) == LATENCY_BUCKETS_MS[0]


def test_a_forked_worker_writes_its_own_file(tmp_path: Path) -> None:
    metrics = RequestMetrics(tmp_path)
    metrics.record(0.001, failed=False)  # the "master" has a file already
    with warnings.catch_warnings():  # Python 3.12+ warns about fork in threaded processes
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            metrics.record(0.001, failed=False)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    snapshot = metrics.snapshot()
    assert snapshot.workers == 2 and snapshot.requests == 2


def test_private_state_dir_is_removed_with_its_owner() -> None:
    state = StateDir(None)
    path = state.path
    assert state.private and path.is_dir()
    del state
    assert not path.exists()


def test_server_exports_one_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(server.STATE_DIR_VARIABLE, str(tmp_path))
    assert server.share_state_dir() == str(tmp_path)
    monkeypatch.delenv(server.STATE_DIR_VARIABLE)
    created = server.share_state_dir()
    assert os.environ[server.STATE_DIR_VARIABLE] == created and Path(created).is_dir()
    assert server.share_state_dir() == created
