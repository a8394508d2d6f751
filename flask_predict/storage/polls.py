"""The watcher's polls of remote model paths: each mirror syncs on a thread of its own, so a
store that does not answer holds up only its own models (:func:`poll_mirrors`).

A poll starts one sync per mirror and waits for them up to a bound; what has not finished
by then goes on in the background while the watcher loads what is on disk. A mirror whose
sync from an earlier poll still runs is not started again; once that sync has run for
:data:`STUCK_SECONDS` a warning names the URI, how long it has run and what it waits for
(once), and a line says when it ends.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from .cache import Choice, Mirror
from .store import Store
from .uri import RemoteUri

logger = logging.getLogger(__name__)

STUCK_SECONDS = 10.0
"""How long a sync runs before the log says so (the store's timeouts end it later)."""


@dataclass
class _Running:
    mirror: Mirror
    thread: threading.Thread
    started: float
    warned: bool = False


class _Polls:
    """The syncs this process runs now, one per mirror folder."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, _Running] = {}

    def after_fork(self) -> None:  # the parent's threads are not the child's
        self.lock = threading.Lock()
        self.running = {}


_polls = _Polls()
os.register_at_fork(after_in_child=_polls.after_fork)


def poll_mirrors(paths: Iterable[tuple[str, Choice | None]], poll_seconds: float,
                 wait: float, store: Callable[[RemoteUri], Store]) -> None:
    """One poll of the mirror of every base path of *paths* (each with the versions its
    model wants; local folders are left alone), each on its own thread; returns once all
    have finished or *wait* seconds have passed. Never raises: a failure is logged by the
    mirror, with backoff."""
    started: list[threading.Thread] = []
    now = time.monotonic()
    with _polls.lock:
        for folder, choose in dict(paths).items():
            running = _polls.running.get(folder)
            if running is not None:
                _warn_if_stuck(running, now)
                continue
            mirror = Mirror.at(folder, store, choose)
            if mirror is None:
                continue
            thread = threading.Thread(target=_sync, args=(mirror, poll_seconds), daemon=True,
                                      name=f"flask-predict-sync {mirror.uri}")
            _polls.running[folder] = _Running(mirror, thread, now)
            thread.start()
            started.append(thread)
    deadline = now + wait
    for thread in started:
        thread.join(max(0.0, deadline - time.monotonic()))


def _warn_if_stuck(running: _Running, now: float) -> None:
    seconds = now - running.started
    if running.warned or seconds < STUCK_SECONDS:
        return
    running.warned = True
    logger.warning("flask_predict: %s: no answer for %.0fs (%s); its models keep the versions "
                   "they serve, the other models are polled as usual", running.mirror.uri,
                   seconds, running.mirror.activity)


def _sync(mirror: Mirror, poll_seconds: float) -> None:
    try:
        mirror.sync(first=False, poll_seconds=poll_seconds)
    except Exception:
        logger.exception("flask_predict: syncing %s failed; the versions cached stay",
                         mirror.uri)
    finally:
        with _polls.lock:
            running = _polls.running.pop(mirror.folder, None)
        if running is not None and running.warned:
            logger.info("flask_predict: %s: the sync ended after %.0fs", mirror.uri,
                           time.monotonic() - running.started)
