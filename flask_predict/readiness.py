"""Server-wide readiness: a gunicorn server is ready when as many of its workers as it runs
are.

Each worker answers probes for the whole server, and a Kubernetes probe (or a load
balancer's) reaches one worker at random; if that worker alone decided, a pod would be
marked ready while a sibling still loads and answers 503. So each worker keeps a marker
file (named by its pid) in the server's shared state folder while its models are loaded,
and a worker is ready when its own models are loaded and at least as many markers as the
server's worker count are there. The master removes a dead worker's marker (gunicorn's
``child_exit``), so a respawned worker that is still loading makes the server not ready
until it is. While workers are replaced one at a time (:mod:`flask_predict.rolling`), the
new one is started first and an old one retired only once the new one is ready: the count
never falls below the worker count.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FOLDER = "ready"


class ReadyMarks:
    """The markers of one server's workers (*workers* of them), under *state_dir*."""

    def __init__(self, state_dir: str | os.PathLike[str], workers: int) -> None:
        self.folder = Path(state_dir) / FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        self.workers = workers

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

    def all_ready(self) -> bool:
        """As many workers as the server runs have their models loaded."""
        try:
            return len(os.listdir(self.folder)) >= self.workers
        except FileNotFoundError:  # the folder was cleaned away under us
            return False

    def clear(self) -> None:
        """No worker is ready (a server starting)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
