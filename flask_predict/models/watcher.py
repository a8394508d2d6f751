"""The per-worker model watcher: new versions and models picked up from disk while serving.

Every ``PREDICT_POLL_SECONDS`` (TF Serving's ``file_system_poll_wait_seconds``) a daemon
thread re-reads the model config file and the version folders and calls
:meth:`ModelRepository.sync <flask_predict.models.repository.ModelRepository.sync>`. Gunicorn's sync
workers serve requests on the main thread, so loading happens beside them; the repository
swaps each model's versions in one assignment once the new version is loaded and warmed up.

A remote model path's mirror (:mod:`flask_predict.storage`) follows its store on a thread of
its own at each poll; the poll waits at most one interval for them, so a store that does
not answer holds up only its own models.

Each worker runs its own watcher over the same files, so every worker reaches the same
served versions within one poll interval, with no state shared between processes. A
version folder counts once it has its numeric name: copy it under another name (``.3.tmp``)
and rename it, which is atomic on one file system (see ``docs/lifecycle.md``).

Models unloaded through the V2 repository extension are named in a file of the server's
shared state folder (:class:`~flask_predict.models.shared_state.NameSet`): every poll leaves them
out of what it syncs, so every worker drops them (and a new worker never loads them), and
serves them again once their name leaves the file. :meth:`Watcher.poll_now` asks for a poll
at once and waits for it, so the worker that changed the file answers once it has followed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from ..errors import PredictError
from ..settings.model_config import with_config_file
from .. import storage
from ..types import ModelSpec
from .repository import ModelRepository
from .shared_state import NameSet

logger = logging.getLogger(__name__)

UNLOADED_MODELS = "unloaded_models"
"""The name set, in the server's shared state folder, of the models not to serve."""


class Watcher:
    """Polls the model configuration and folders of one app in one process.

    :param repository: the app's models.
    :param fixed: the models of ``PREDICT_MODELS`` (fixed while serving: the environment
        of a running process does not change), parsed once with the settings.
    :param config_file: ``PREDICT_MODEL_CONFIG_FILE``, re-read on every poll, or ``None``.
    :param poll_seconds: the pause between two polls; 0 with *load_first* loads once.
    :param load_first: load the models at once when the thread starts (the worker serves
        liveness meanwhile), then poll.
    :param unloaded: the names of configured models not to serve (shared by the workers).
    :param select: which of the configured models to sync (the gunicorn master's watcher
        syncs the shared ones, :mod:`flask_predict.models.sharing`); default: all.
    """

    def __init__(self, repository: ModelRepository, fixed: tuple[ModelSpec, ...] | None,
                 config_file: str | None,
                 poll_seconds: float, specs: tuple[ModelSpec, ...],
                 load_first: bool = False, unloaded: NameSet | None = None,
                 select: Callable[[ModelSpec], bool] | None = None) -> None:
        self.repository = repository
        self.fixed = fixed or ()
        self.config_file = config_file
        self.poll_seconds = poll_seconds
        self.specs = specs
        """The configuration last read successfully; kept while the file is broken."""
        self.unloaded = unloaded
        self.select = select
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._polls = threading.Condition()
        self._polls_started = self._polls_done = 0
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._last_error: str | None = None
        self.load_first = load_first
        self._first_load_done = threading.Event()
        self._after_first_load: list[Callable[[], None]] = []
        self._after_poll: list[Callable[[], None]] = []
        self._callbacks = threading.Lock()
        """Held while a callback is added and while the first load is declared done, so
        none added meanwhile is missed."""
        if not load_first:
            self._first_load_done.set()

    def after_first_load(self, callback: Callable[[], None]) -> None:
        """Call *callback* once the first load is done (at once if it is), on the
        watcher's thread; failures are logged."""
        with self._callbacks:
            done = self._first_load_done.is_set()
            if not done:
                self._after_first_load.append(callback)
        if done:
            _call(callback)

    def after_each_poll(self, callback: Callable[[], None]) -> None:
        """Call *callback* after every poll from now on, and once the first load is done
        (at once if it is: so at least once even when no poll follows, polling off);
        failures are logged."""
        with self._callbacks:
            self._after_poll.append(callback)
            done = self._first_load_done.is_set()
            if not done:
                self._after_first_load.append(callback)
        if done:
            _call(callback)

    def wait_first_load(self, timeout: float | None = None) -> bool:
        """Block until the first load is done; ``False`` on timeout."""
        return self._first_load_done.wait(timeout)

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive() and self._pid == os.getpid()

    def start(self) -> None:
        """Start polling in a daemon thread of this process.

        Threads do not survive ``fork``: the watcher must start in the process that
        serves, which is why gunicorn's ``preload_app`` stays off.
        """
        if self.running:
            return
        self._stop.clear()
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="flask-predict-watcher",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling; wait up to *timeout* seconds for a load in progress to finish."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() \
                and self._pid == os.getpid():
            thread.join(timeout)

    def _run(self) -> None:
        if self.load_first and not self._first_load_done.is_set():
            started = time.perf_counter()
            self.poll()
            logger.info("flask_predict: first load done in %.2fs; ready: %s",
                        time.perf_counter() - started, self.repository.ready)
            with self._callbacks:
                self._first_load_done.set()
                callbacks = list(self._after_first_load)
            for callback in callbacks:
                _call(callback)
            if self.poll_seconds <= 0:
                return
        while not self._stop.is_set():
            self._wake.wait(self.poll_seconds)
            self._wake.clear()
            if self._stop.is_set():
                break
            self.poll()

    def poll_now(self, timeout: float) -> bool:
        """Poll at once and wait (up to *timeout* seconds) until a poll that started after
        this call has finished; ``False`` on timeout. Without a polling thread the poll
        runs here."""
        if not self.running or self.poll_seconds <= 0:
            self.poll()
            return True
        with self._polls:
            wanted = self._polls_started + 1
        self._wake.set()
        with self._polls:
            return self._polls.wait_for(lambda: self._polls_done >= wanted, timeout)

    def served(self, specs: tuple[ModelSpec, ...]) -> tuple[ModelSpec, ...]:
        """*specs* without the models unloaded through the repository extension (and those
        :attr:`select` leaves out)."""
        unloaded = self.unloaded.read() if self.unloaded is not None else frozenset()
        return tuple(spec for spec in specs if spec.name not in unloaded
                     and (self.select is None or self.select(spec)))

    def poll(self) -> None:
        """Read the configuration and sync the repository once; never raises."""
        with self._polls:
            self._polls_started += 1
            number = self._polls_started
        try:
            self._sync()
        finally:
            with self._polls:
                self._polls_done = max(self._polls_done, number)
                self._polls.notify_all()

    def _sync(self) -> None:
        try:
            self.specs = self.read_specs()
            if self.select is not None:
                # the master: a remote model's files, fetched first, say whether it is shared
                unloaded = self.unloaded.read() if self.unloaded is not None else frozenset()
                storage.fetch((spec.base_path, spec.serves) for spec in self.specs
                              if spec.name not in unloaded)
            served = self.served(self.specs)
            # remote model paths: each mirror follows its store on a thread of its own, so
            # a store that does not answer holds up only its models
            storage.poll([(spec.base_path, spec.serves) for spec in served],
                         self.poll_seconds, wait=max(self.poll_seconds, 1.0))
            self.repository.sync(served)
        except Exception as exc:
            self._report(exc)
        else:
            if self._last_error is not None:
                logger.info("flask_predict: model configuration readable again")
            self._last_error = None
        for callback in list(self._after_poll):
            _call(callback)

    def read_specs(self) -> tuple[ModelSpec, ...]:
        """The configured models now (the config file as it is on disk)."""
        if self.config_file is None:
            return self.specs
        return with_config_file(self.fixed, self.config_file)

    def _report(self, exc: Exception) -> None:
        """Log a failure once per cause; the models already loaded go on serving."""
        message = exc.message if isinstance(exc, PredictError) else \
            f"{type(exc).__name__}: {exc}"
        if message == self._last_error:
            return
        self._last_error = message
        if isinstance(exc, PredictError):
            logger.error("flask_predict: reload skipped, the served models stay: %s", message)
        else:
            logger.exception("flask_predict: reload failed, the served models stay")


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:
        logger.exception("flask_predict: a callback after the first model load failed")
