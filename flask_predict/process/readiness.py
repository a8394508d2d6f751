"""Server-wide readiness: a gunicorn server is ready when as many of its workers as the
operator wants now are.

Each worker answers probes for the whole server, and a Kubernetes probe (or a load
balancer's) reaches one worker at random; if that worker alone decided, a pod would be
marked ready while a sibling still loads and answers 503. So each worker keeps a marker
file (named by its pid) in the server's shared state folder while its models are loaded,
and a worker is ready when its own models are loaded and at least as many markers as the
wanted worker count are there. The count is the operator's (``--workers``, ``TTIN``,
``TTOU``, a reload), which the master writes beside the markers whenever it changes
(:class:`flask_predict.process.rolling.WorkerPool`). The master removes a dead worker's marker
(gunicorn's ``child_exit``), so a respawned worker that is still loading makes the server
not ready until it is. While workers are replaced one at a time
(:mod:`flask_predict.process.rolling`), the new one is started first and an old one retired only
once the new one is ready: the count never falls below the wanted count.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

FOLDER = "ready"
WANTED = "wanted_workers"
"""The file, beside the markers' folder, holding the worker count wanted now."""


class ReadyMarks:
    """The markers of one server's workers under *state_dir*; *workers*: the count wanted
    until the master writes one."""

    def __init__(self, state_dir: str | os.PathLike[str], workers: int) -> None:
        self.folder = Path(state_dir) / FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        self.workers = workers
        self._wanted = Path(state_dir) / WANTED

    def mark(self, pid: int, ready: bool) -> None:
        """Record whether worker *pid* has its models loaded."""
        path = self.folder / str(pid)
        if ready:
            if not path.exists():
                path.touch()
        else:
            path.unlink(missing_ok=True)

    def is_ready(self, pid: int) -> bool:
        return (self.folder / str(pid)).exists()

    def want(self, workers: int) -> None:
        """The master: *workers* is the count wanted now."""
        fd, temp = tempfile.mkstemp(dir=self._wanted.parent, prefix=".wanted-")
        with os.fdopen(fd, "w") as file:
            file.write(str(workers))
        os.replace(temp, self._wanted)

    @property
    def wanted(self) -> int:
        """The worker count wanted now."""
        try:
            return int(self._wanted.read_text())
        except (OSError, ValueError):
            return self.workers

    def all_ready(self) -> bool:
        """As many workers as wanted have their models loaded."""
        try:
            return len(os.listdir(self.folder)) >= self.wanted
        except FileNotFoundError:  # the folder was cleaned away under us
            return False

    def any_ready(self, besides: int) -> bool:
        """Some worker other than *besides* has its models loaded (and serves them)."""
        try:
            return any(name != str(besides) for name in os.listdir(self.folder))
        except FileNotFoundError:
            return False

    def clear(self) -> None:
        """No worker is ready (a server starting)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._wanted.unlink(missing_ok=True)


def any_marked(state_dir: str | os.PathLike[str]) -> bool:
    """Some worker of the server whose state folder is *state_dir* has its models loaded
    (none once the folder is gone: that server has stopped). Creates nothing."""
    try:
        return bool(os.listdir(Path(state_dir) / FOLDER))
    except OSError:
        return False
