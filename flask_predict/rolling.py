"""Replace gunicorn's workers one at a time, so that every worker forked from now on inherits
what the master holds now (:mod:`flask_predict.sharing`), with no request failed and
readiness kept.

One step: ask the master for one more worker (``SIGTTIN``, as an operator would), wait until
that worker is ready (its marker, :mod:`flask_predict.readiness`), then ask for one fewer
(``SIGTTOU``): gunicorn stops its oldest worker gracefully, and that worker finishes the
request it holds before it exits. Steps repeat until no worker older than the rollout is
left. The listening socket is shared, so connections wait in its queue for whichever worker
accepts next; and at least as many workers as configured are ready throughout, so server-wide
readiness holds. Runs on a thread of the master (the shared models' watcher): the arbiter's
own loop does every fork and kill.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

from .readiness import ReadyMarks

logger = logging.getLogger(__name__)

STEP_SECONDS = 0.05
"""How often a step looks at the arbiter's workers and the readiness markers."""


class Rollout:
    """Rolling replacements of *arbiter*'s workers (gunicorn's ``Arbiter``)."""

    def __init__(self, arbiter: Any, marks: ReadyMarks, ready_seconds: float) -> None:
        self.arbiter = arbiter
        self.marks = marks
        self.ready_seconds = ready_seconds
        """How long a new worker may take to be ready before the old one goes anyway."""

    def replace_workers(self) -> None:
        """Replace every worker forked before this call, one at a time."""
        arbiter = self.arbiter
        boundary = arbiter.worker_age
        target = arbiter.num_workers
        started = time.monotonic()
        replaced = 0
        for _ in range(2 * len(arbiter.WORKERS) + 2):  # a worker that fails to boot ends it
            workers = dict(arbiter.WORKERS)
            old = sorted((w.age, pid) for pid, w in workers.items() if w.age <= boundary)
            if not old:
                break
            if arbiter.num_workers > target:  # a step left unfinished: finish it first
                self._signal(signal.SIGTTOU)
                self._wait_gone(old[0][1])
                continue
            self._signal(signal.SIGTTIN)
            new = self._wait_new(set(workers), boundary)
            if new is not None and not self._wait_ready(new):
                logger.warning("flask_predict: worker %s not ready after %.0fs; replacing the "
                               "next old worker anyway", new, self.ready_seconds)
            self._signal(signal.SIGTTOU)
            self._wait_gone(old[0][1])
            replaced += 1
        if replaced:
            logger.info("flask_predict: %d worker(s) replaced in %.1fs", replaced,
                        time.monotonic() - started)

    def _signal(self, number: int) -> None:
        os.kill(self.arbiter.pid, number)

    def _wait_new(self, before: set[int], boundary: int) -> int | None:
        """The pid of the worker the master forks for this step."""
        deadline = time.monotonic() + self.ready_seconds
        while time.monotonic() < deadline:
            for pid, worker in dict(self.arbiter.WORKERS).items():
                if pid not in before and worker.age > boundary:
                    return int(pid)
            time.sleep(STEP_SECONDS)
        return None

    def _wait_ready(self, pid: int) -> bool:
        deadline = time.monotonic() + self.ready_seconds
        while time.monotonic() < deadline:
            if self.marks.is_ready(pid):
                return True
            if pid not in self.arbiter.WORKERS:  # died while booting: the master respawns
                return False
            time.sleep(STEP_SECONDS)
        return False

    def _wait_gone(self, pid: int) -> None:
        """Until the master has reaped worker *pid* (it finishes its request first)."""
        deadline = time.monotonic() + self.arbiter.cfg.graceful_timeout + 5
        while pid in self.arbiter.WORKERS and time.monotonic() < deadline:
            time.sleep(STEP_SECONDS)
