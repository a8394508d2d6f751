"""The model folders of a lazy tier's root, as its index lists them (docs/many-models.md): a
local root's read on every call; a remote root's (``gs://``, ``s3://``) listed from its store
at most once every :data:`LIST_SECONDS`, on a thread of its own that a caller waits for at
most :data:`WAIT_SECONDS`. A store that cannot be listed is logged once (and once more when
it answers again); meanwhile the last good listing stands, so an index never fails for it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from ..storage import StorageError, folders, is_remote
from .added_models import valid_name

logger = logging.getLogger(__name__)

LIST_SECONDS = 10.0
"""How often a remote root's store is listed at most (by the tier's clock)."""
WAIT_SECONDS = 3.0
"""How long a call waits for a listing that is running; past it, the last listing answers
(a store that hangs holds an index up this long, once)."""


class RootFolders:
    """The valid model names among the folders of *root*."""

    def __init__(self, root: str, clock: Callable[[], float] = time.monotonic, *,
                 every: float = LIST_SECONDS, wait: float = WAIT_SECONDS) -> None:
        self.root, self.every, self.wait = root, every, wait
        self._clock = clock
        self._lock = threading.Lock()
        self._listed: frozenset[str] = frozenset()  # the last good listing of a remote root
        self._due: float | None = None  # when the next listing may start (None: at once)
        self._running: tuple[int, float, threading.Event] | None = None  # pid, start, done
        self._failing = False

    def names(self) -> frozenset[str]:
        """The root's folders: a local root's now, a remote root's last listing (listed
        again first, when :data:`LIST_SECONDS` have passed since the last one started)."""
        if not is_remote(self.root):
            try:
                with os.scandir(self.root) as entries:
                    return frozenset(e.name for e in entries
                                     if e.is_dir() and valid_name(e.name))
            except OSError:
                return frozenset()
        now = self._clock()
        with self._lock:
            running = self._running
            if running is not None and running[0] != os.getpid():
                running = None  # started before this process was forked: never ends here
            if running is None and (self._due is None or now >= self._due):
                self._due = now + self.every
                running = (os.getpid(), time.monotonic(), threading.Event())
                threading.Thread(target=self._list, args=(running[2],), daemon=True,
                                 name=f"flask-predict-list {self.root}").start()
            self._running = running
        if running is not None:
            running[2].wait(max(0.0, running[1] + self.wait - time.monotonic()))
        return self._listed

    def _list(self, done: threading.Event) -> None:
        try:
            found = folders(self.root)
        except Exception as exc:
            cause = exc.message if isinstance(exc, StorageError) else \
                f"{self.root}: cannot list: {type(exc).__name__}"
            if not self._failing:
                logger.warning("flask_predict: %s; the lazy tier's index lists the models "
                               "known here until its root is listed again (tried every %gs)",
                               cause, self.every)
            self._failing = True
        else:
            if self._failing:
                logger.info("flask_predict: the lazy root %s is listed again", self.root)
            self._failing = False
            self._listed = frozenset(name for name in found if valid_name(name))
        finally:
            with self._lock:
                self._running = None
            done.set()
