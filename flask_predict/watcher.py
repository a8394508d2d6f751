"""The per-worker model watcher: new versions and models picked up from disk while serving.

Every ``PREDICT_POLL_SECONDS`` (TF Serving's ``file_system_poll_wait_seconds``) a daemon
thread re-reads the model config file and the version folders and calls
:meth:`ModelRepository.sync <flask_predict.repository.ModelRepository.sync>`. Gunicorn's sync
workers serve requests on the main thread, so loading happens beside them; the repository
swaps each model's versions in one assignment once the new version is loaded and warmed up.

Each worker runs its own watcher over the same files, so every worker reaches the same
served versions within one poll interval, with no state shared between processes. A
version folder counts once it has its numeric name: copy it under another name (``.3.tmp``)
and rename it, which is atomic on one file system (see ``docs/lifecycle.md``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Callable

from .config import load_models
from .errors import PredictError
from .repository import ModelRepository
from .types import ModelSpec

logger = logging.getLogger(__name__)


class Watcher:
    """Polls the model configuration and folders of one app in one process.

    :param repository: the app's models.
    :param models: the ``PREDICT_MODELS`` value read by ``init_app`` (fixed while serving).
    :param config_file: ``PREDICT_MODEL_CONFIG_FILE``, re-read on every poll, or ``None``.
    :param poll_seconds: the pause between two polls; 0 with *load_first* loads once.
    :param load_first: load the models at once when the thread starts (the worker serves
        liveness meanwhile), then poll.
    """

    def __init__(self, repository: ModelRepository, models: Any, config_file: str | None,
                 poll_seconds: float, specs: tuple[ModelSpec, ...],
                 load_first: bool = False) -> None:
        self.repository = repository
        self.models = models
        self.config_file = config_file
        self.poll_seconds = poll_seconds
        self.specs = specs
        """The configuration last read successfully; kept while the file is broken."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._last_error: str | None = None
        self.load_first = load_first
        self._first_load_done = threading.Event()
        self._after_first_load: list[Callable[[], None]] = []
        self._after_poll: list[Callable[[], None]] = []
        if not load_first:
            self._first_load_done.set()

    def after_first_load(self, callback: Callable[[], None]) -> None:
        """Call *callback* once the first load is done (at once if it is), on the
        watcher's thread; failures are logged."""
        if self._first_load_done.is_set():
            _call(callback)
        else:
            self._after_first_load.append(callback)

    def after_each_poll(self, callback: Callable[[], None]) -> None:
        """Call *callback* after every poll from now on (and once at once if the first
        load is done), on the watcher's thread; failures are logged."""
        self._after_poll.append(callback)
        if self._first_load_done.is_set():
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
            self._first_load_done.set()
            for callback in self._after_first_load:
                _call(callback)
            if self.poll_seconds <= 0:
                return
        while not self._stop.wait(self.poll_seconds):
            self.poll()

    def poll(self) -> None:
        """Read the configuration and sync the repository once; never raises."""
        try:
            self.specs = self.read_specs()
            self.repository.sync(self.specs)
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
        return load_models(self.models, self.config_file)

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
