"""Shared state: flags that several processes of one server see alike."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from flask_predict.process import server
from flask_predict.models.shared_state import SharedFlag, StateDir


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


def _child(flag_path: str) -> None:
    SharedFlag(Path(flag_path), initial=True).set(False)


def test_another_process_sees_the_same_flag(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    flag = state.flag("online", initial=True)
    child = multiprocessing.get_context("spawn").Process(target=_child, args=(str(flag.path),))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert flag.get() is False


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


def _add_names(path: str, prefix: str) -> None:
    names = StateDir(path).names("models")
    for i in range(20):
        names.add(f"{prefix}{i}")


def test_name_sets_lose_no_change_made_at_once_by_several_processes(tmp_path: Path) -> None:
    names = StateDir(tmp_path).names("models")
    assert names.read() == frozenset()
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_add_names, args=(str(tmp_path), p)) for p in "abc"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert names.read() == {f"{p}{i}" for p in "abc" for i in range(20)}
    names.discard("a0")
    names.discard("never")
    assert "a0" not in StateDir(tmp_path).names("models").read()
    (tmp_path / "models.json").write_text("{broken")
    assert names.read() == frozenset()  # unreadable: nothing unloaded, not a failure
