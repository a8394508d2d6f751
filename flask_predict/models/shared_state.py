"""State that every worker process of one server shares: flags and name sets.

Gunicorn runs several worker processes, each with its own copy of the app, so anything
that must be the same in every worker (grps's online/offline switch) cannot live in a
Python object. It lives in files in one folder that all workers of one server see:

* the master creates that folder once (:func:`flask_predict.process.server.share_state_dir`) and
  exports it as ``FLASK_PREDICT_STATE_DIR``, which every worker reads as
  ``PREDICT_STATE_DIR``; a user may also set it to a folder of their choice;
* an app embedded in a single process without that setting gets a private temporary
  folder, removed when the app's state is garbage-collected or the process exits.

**Flags** (:class:`SharedFlag`) are one small file: ``1`` for true, empty for false. The
first process to open a flag creates it with its initial value (``os.link`` of a finished
file, so no reader ever sees a half-written one and later workers never reset it); setting
the flag replaces the file atomically (``os.replace``); reading it is one ``stat`` of its
size. No lock.

**Name sets** (:class:`NameSet`) are one small JSON file holding a list of names (the
models unloaded through the V2 repository extension). A change reads, edits and replaces
the file under an exclusive ``flock`` of a lock file beside it, so two workers changing it
at once lose neither change; readers read the file without a lock (it is replaced whole).

Request metrics live in prometheus_client's multiprocess files instead
(:mod:`flask_predict.observability.metrics`), in the ``prometheus`` folder of the server's state folder.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path


class StateDir:
    """The folder holding one server's shared state."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.private = path is None
        """True for a temporary folder this object created (an embedded, one-process app)."""
        if path is None:
            self.path = Path(tempfile.mkdtemp(prefix="flask-predict-state-"))
            weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)
        else:
            self.path = Path(path)
            self.path.mkdir(parents=True, exist_ok=True)

    def flag(self, name: str, initial: bool) -> SharedFlag:
        return SharedFlag(self.path / f"{name}.flag", initial)

    def names(self, name: str) -> NameSet:
        return NameSet(self, self.path / f"{name}.json")


class SharedFlag:
    """A boolean every process of the server reads and any of them may set.

    *initial* is used only by the first process that opens the flag in this folder.
    """

    def __init__(self, path: Path, initial: bool) -> None:
        self.path = path
        self.initial = initial
        self._write(initial, create_only=True)

    def get(self) -> bool:
        """The current value: the file holds one byte when true and none when false, so
        one ``stat`` answers without opening it."""
        try:
            return os.stat(self.path).st_size > 0
        except FileNotFoundError:  # the folder was cleaned away under us
            return self.initial

    def set(self, value: bool) -> None:
        self._write(value, create_only=False)

    def _write(self, value: bool, create_only: bool) -> None:
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".flag-")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(b"1" if value else b"")
            if create_only:
                try:
                    os.link(temp, self.path)
                except FileExistsError:
                    pass
            else:
                os.replace(temp, self.path)
                temp = ""
        finally:
            if temp:
                os.unlink(temp)


class NameSet:
    """A set of names every process of the server reads and any of them may change."""

    def __init__(self, folder: StateDir, path: Path) -> None:
        self.folder = folder
        """Kept so that a private folder lives as long as the set."""
        self.path = path

    def read(self) -> frozenset[str]:
        """The names now (none when the file does not exist or is not a list of names)."""
        try:
            names = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return frozenset()
        if not isinstance(names, list):
            return frozenset()
        return frozenset(name for name in names if isinstance(name, str))

    def add(self, name: str) -> None:
        self._change(name, present=True)

    def discard(self, name: str) -> None:
        self._change(name, present=False)

    def _change(self, name: str, present: bool) -> None:
        with open(self.path.with_suffix(".lock"), "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            names = set(self.read())
            if (name in names) == present:
                return
            if present:
                names.add(name)
            else:
                names.discard(name)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".names-")
            with os.fdopen(fd, "wb") as file:
                file.write(json.dumps(sorted(names)).encode())
            os.replace(temp, self.path)


def create_server_dir() -> str:
    """A fresh folder for one server's state, removed when the creating process exits
    (only that process: forked workers inherit ``atexit`` handlers too)."""
    path = tempfile.mkdtemp(prefix="flask-predict-state-")
    atexit.register(_remove_if_owner, path, os.getpid())
    return path


def _remove_if_owner(path: str, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)
