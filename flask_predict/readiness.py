"""Server-wide readiness: a gunicorn server is ready when every one of its workers is.

Each worker answers probes for the whole server, and a Kubernetes probe (or a load
balancer's) reaches one worker at random; if that worker alone decided, a pod would be
marked ready while a sibling still loads and answers 503. So each worker keeps a marker
file (its worker index) in the server's shared state folder while its models are loaded,
and a worker is ready when its own models are loaded and every worker's marker is there.
The master removes a dead worker's marker (gunicorn's ``child_exit``), so a respawned
worker that is still loading makes the server not ready until it is.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER = "ready"


class ReadyMarks:
    """The markers of one server's *workers* workers, under *state_dir*."""

    def __init__(self, state_dir: str | os.PathLike[str], workers: int) -> None:
        self.folder = Path(state_dir) / FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        self.workers = workers

    def mark(self, index: int, ready: bool) -> None:
        """Record whether worker *index* has its models loaded."""
        path = self.folder / str(index)
        if ready:
            if not path.exists():
                path.touch()
        else:
            path.unlink(missing_ok=True)

    def all_ready(self) -> bool:
        """Every worker of the server has its models loaded."""
        return all((self.folder / str(i)).exists() for i in range(self.workers))
