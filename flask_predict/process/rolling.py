"""The master's worker pool: the count the operator asked for, kept through everything, and
rolling replacements of the workers so that every worker serves what the master holds now
(:mod:`flask_predict.models.sharing`), with no request failed and readiness kept.

:class:`WorkerPool` owns gunicorn's worker count (``Arbiter.num_workers``): the operator's
count (``--workers``, then each ``TTIN``/``TTOU``, reset by a ``HUP`` to the configured one,
as gunicorn does), plus one while a rollout starts a worker's replacement. Readiness counts
against the operator's count (:mod:`flask_predict.process.readiness`), never against the count at
start. The arbiter's own loop does every fork and kill.

One rollout step (:class:`Rollout`): one worker more, wait until a worker forked for the
rollout is ready (a replacement that dies is respawned by the arbiter, and waited for), then
one fewer: gunicorn stops its oldest worker gracefully, and that worker finishes the request
it holds before it exits. Steps repeat until no worker older than the rollout is left; a
reload (which replaces every worker) ends it. The listening socket is shared, so connections
wait in its queue for whichever worker accepts next, and a worker accepts only once it can
serve. Runs on a thread of the master (the shared models' watcher).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .readiness import ReadyMarks

logger = logging.getLogger(__name__)

STEP_SECONDS = 0.05
"""How often a step looks at the arbiter's workers and the readiness markers."""


class WorkerPool:
    """The worker count of *arbiter* (gunicorn's ``Arbiter``), kept through gunicorn's own
    hooks: ``nworkers_changed`` (every change of ``num_workers``: ``TTIN``, ``TTOU``, a
    reload's setup) and ``on_reload`` (``HUP``), which the deployment's settings delegate to
    :meth:`workers_changed` and :meth:`reloaded`. gunicorn's handlers run as written; the
    pool only keeps the operator's count apart from a rollout's extra worker."""

    def __init__(self, arbiter: Any, marks: ReadyMarks) -> None:
        self.arbiter = arbiter
        self.marks = marks
        self.wanted = int(arbiter.num_workers)
        """The count the operator asked for."""
        self.surge = 0
        """Workers started beyond it by a rollout step (0 or 1)."""
        self.reloads = 0
        """How many reloads (``HUP``) the arbiter has made: each replaces every worker."""
        self._lock = threading.Lock()
        self._applying = threading.local()
        """Set on the thread that is changing ``num_workers`` for the pool itself."""
        marks.want(self.wanted)

    def workers_changed(self, new: int | None, old: int | None) -> None:
        """gunicorn's ``nworkers_changed``: a change the pool did not make is the operator's
        (``TTIN`` one more, ``TTOU`` one fewer, never none; a reload's setup, which
        :meth:`reloaded` settles next), applied to the operator's count; a rollout's extra
        worker is kept on top of it."""
        if getattr(self._applying, "on", False) or new is None or old is None or new == 0:
            return  # the pool's own change, gunicorn's first setup, or a stop (WINCH)
        with self._lock:
            self.wanted = max(1, self.wanted + new - old)
            self._apply()

    def reloaded(self) -> None:
        """gunicorn's ``on_reload`` (``SIGHUP``, before the new workers are spawned): the
        configured count, and the end of the rollout step in progress, since no worker older
        than the reload is left."""
        with self._lock:
            self.reloads += 1
            self.surge = 0
            self.wanted = int(self.arbiter.cfg.workers)
            self._apply()
        logger.info("flask_predict: reloaded; %d worker(s) wanted", self.wanted)

    def set_surge(self, extra: int) -> None:
        """Run *extra* workers beyond the operator's count (from a rollout's thread)."""
        with self._lock:
            self.surge = extra
            self._apply()
        self.arbiter.wakeup()

    def _apply(self) -> None:
        self._applying.on = True
        try:
            self.arbiter.num_workers = self.wanted + self.surge
        finally:
            self._applying.on = False
        self.marks.want(self.wanted)


class Rollout:
    """Rolling replacements of the workers of *pool*'s arbiter."""

    def __init__(self, pool: WorkerPool, ready_seconds: float) -> None:
        self.pool = pool
        self.arbiter = pool.arbiter
        self.marks = pool.marks
        self.ready_seconds = ready_seconds
        """How long a step waits for a replacement to be ready (counted again from each
        respawn of a replacement that died, three times this at most) before an old worker
        goes anyway."""

    def replace_workers(self) -> None:
        """Replace every worker forked before this call, one at a time."""
        pool = self.pool
        boundary = self.arbiter.worker_age
        reloads = pool.reloads
        started = time.monotonic()
        replaced = 0
        while pool.reloads == reloads:
            if not self._old(boundary):
                break
            before = self._new_ready(boundary)
            pool.set_surge(1)
            if not self._wait_ready(boundary, before, reloads):
                logger.warning("flask_predict: no new worker ready after %.0fs; replacing the "
                               "next old worker anyway", self.ready_seconds)
            if pool.reloads != reloads:
                break
            pool.set_surge(0)  # the arbiter stops its oldest worker: an old one
            self._wait_stopped()
            replaced += 1
        if pool.surge and pool.reloads == reloads:
            pool.set_surge(0)
        if replaced:
            logger.info("flask_predict: %d worker(s) replaced in %.1fs", replaced,
                        time.monotonic() - started)

    def _old(self, boundary: int) -> list[int]:
        return [pid for pid, worker in dict(self.arbiter.WORKERS).items()
                if worker.age <= boundary]

    def _new_ready(self, boundary: int) -> int:
        return sum(1 for pid, worker in dict(self.arbiter.WORKERS).items()
                   if worker.age > boundary and self.marks.is_ready(pid))

    def _wait_ready(self, boundary: int, before: int, reloads: int) -> bool:
        """Until one more worker forked since *boundary* is ready than *before*."""
        now = time.monotonic()
        deadline, limit = now + self.ready_seconds, now + 3 * self.ready_seconds
        seen = set(self.arbiter.WORKERS)
        while time.monotonic() < min(deadline, limit) and self.pool.reloads == reloads:
            if self._new_ready(boundary) > before:
                return True
            workers = set(self.arbiter.WORKERS)
            if workers - seen:  # a replacement (or its respawn) forked: it gets its time
                deadline = time.monotonic() + self.ready_seconds
            seen = workers
            time.sleep(STEP_SECONDS)
        return self.pool.reloads != reloads

    def _wait_stopped(self) -> None:
        """Until the arbiter is back to the count wanted (the old worker it stopped has
        finished its request and exited)."""
        deadline = time.monotonic() + self.arbiter.cfg.graceful_timeout + 5
        while (len(self.arbiter.WORKERS) > self.pool.wanted + self.pool.surge
               and time.monotonic() < deadline):
            time.sleep(STEP_SECONDS)
