"""Models held once per machine: the gunicorn master loads them before it forks its workers,
and every worker serves them from the same memory pages.

Each sync worker is a process of its own, so a model each worker loads costs its memory once
per worker. A model whose plugin's manifest says ``shared`` (scikit-learn and XGBoost; a custom
class whose model sets ``"shared": true``) is loaded in the master instead (:class:`MasterModels`):
``fork`` hands every worker the master's pages copy-on-write, and ``gc.freeze()`` keeps the
garbage collector from writing to the objects loaded so far, so those pages stay shared. A
worker's repository serves what it inherited (the :class:`~flask_predict.served.Shelf`,
:func:`inherited`) and never loads a shared model itself. TensorFlow keeps loading in each
worker: its runtime does not survive a fork.

The master's watcher polls the same configuration and version folders as the workers'. When
what it holds changes (a version loaded, replaced or dropped, a model added or removed), it
publishes the new set for the workers forked from then on, and the server replaces the
running workers one at a time (:mod:`flask_predict.rolling`): each old worker finishes the
requests it holds, so a replaced version is released with the last worker that served it. A
version that fails to load in the master changes nothing served and replaces no worker: the
workers read it from a file of the server's state folder (:class:`FailureBoard`).

Fork safety: the master never predicts on more than one thread and never warms up. It sizes
every native pool to one thread before any framework loads (OpenMP, BLAS): a libgomp pool
started in a parent hangs the next parallel region of its forked child. Loading runs on the
watcher's thread; every fork of the master waits until no load is in progress
(``os.register_at_fork``), so a worker never inherits a half-loaded model or a lock held by a
load. Each worker sizes its pools after the fork and calls ``Predictor.after_fork`` on what it
inherited (XGBoost's ``nthread``).
"""

from __future__ import annotations

import gc
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from .artifacts import version_folders, version_path
from .errors import ConfigError
from .memory import release
from .plugins import Manifest, detect_predictor, load_predictor_class, manifests
from .repository import ModelRepository
from .served import ServedModel, Shelf, VersionStatus
from .types import ModelSpec
from .watcher import Watcher

logger = logging.getLogger(__name__)

_shelf: Shelf | None = None
"""What the master holds now; a forked worker inherits the value of its fork."""


def inherited() -> Shelf | None:
    """The models this process inherited from its gunicorn master; ``None`` in a process that
    loads everything itself (an embedding app, sharing turned off)."""
    return _shelf


class Shareable:
    """Which models the master loads: those whose plugin's manifest says ``shared`` for their
    options. The plugin is the one the model names, else the one detected on its newest
    version folder. Decided once per model configuration, from manifests only (no framework
    is imported), and the same in the master and every worker (they share this object)."""

    def __init__(self, found: Mapping[str, Manifest] | None = None) -> None:
        self._manifests = manifests() if found is None else dict(found)
        self._decided: dict[str, bool] = {}

    def __call__(self, spec: ModelSpec) -> bool:
        key = repr((spec.name, spec.base_path, spec.predictor,
                    sorted(spec.options.items(), key=str)))
        decided = self._decided.get(key)
        if decided is not None:
            return decided
        plugin = spec.predictor
        if plugin is None:
            versions = version_folders(spec.base_path)
            if not versions:
                return False  # undecided until a version folder appears
            try:
                plugin = detect_predictor(version_path(spec.base_path, max(versions)),
                                          spec.options, self._manifests)
            except ConfigError:
                return False  # each worker's own load reports it
        manifest = self._manifests.get(plugin)
        decided = manifest is not None and manifest.shares(spec.options)
        self._decided[key] = decided
        return decided


class FailureBoard:
    """The versions the master failed to load, in a file of the server's state folder that
    every worker reads as it polls: a failure changes nothing served, so it replaces no
    worker, and every worker still shows it in its statuses and logs it once."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def write(self, failed: Mapping[str, Mapping[int, VersionStatus]]) -> None:
        data = {name: [[v, s.error, s.cause, s.stamp] for v, s in sorted(versions.items())]
                for name, versions in failed.items() if versions}
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".failed-")
        with os.fdopen(fd, "w") as file:
            json.dump(data, file)
        os.replace(temp, self.path)

    def read(self) -> dict[str, dict[int, VersionStatus]]:
        try:
            data = json.loads(self.path.read_bytes())
            return {name: {int(v): VersionStatus(int(v), "END", error=str(error),
                                                 cause=str(cause), stamp=float(stamp))
                           for v, error, cause, stamp in entries}
                    for name, entries in data.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}


class MasterModels:
    """In the gunicorn master: the shared models, loaded (never warmed up) and reloaded from
    disk by a watcher on a thread of the master, published for every worker forked later.

    :param specs: the configured models (``Settings.models``).
    :param models: the raw ``PREDICT_MODELS`` value; *config_file* and *poll_seconds* as the
        workers' watchers read them.
    :param state_dir: the server's shared state folder, for the :class:`FailureBoard`
        (without it, a failure replaces the workers so that they show it).

    Models unloaded through V2's repository extension stay loaded here (the workers stop
    serving them), so loading them again is immediate.
    """

    def __init__(self, specs: tuple[ModelSpec, ...], models: Any, config_file: str | None,
                 poll_seconds: float, shareable: Shareable | None = None,
                 state_dir: str | None = None) -> None:
        self.shareable = shareable or Shareable()
        self.repository = ModelRepository(load_predictor_class, warm=False)
        self.watcher = Watcher(self.repository, models, config_file, poll_seconds, specs,
                               select=self.shareable)
        self.board = FailureBoard(Path(state_dir) / "shared_failures.json") \
            if state_dir else None
        self.generation = 0
        self._published: object = None
        self._failed: object = None
        self._pid = os.getpid()
        self._forking = False
        os.register_at_fork(before=self._before_fork, after_in_parent=self._after_fork,
                            after_in_child=self._after_fork)

    def load(self) -> None:
        """Load the shared models now, on this thread, and publish them (before the first
        worker is forked)."""
        self.watcher.poll()
        self.publish()

    def start(self, changed: Callable[[], None]) -> None:
        """Poll on the watcher's thread; after a poll that changed what the master holds,
        call *changed* there (the server replaces its workers)."""
        def after_poll() -> None:
            if self.publish():
                changed()
        self.watcher.after_each_poll(after_poll)
        if self.watcher.poll_seconds > 0:
            self.watcher.start()

    def publish(self) -> bool:
        """Make what the master holds now the workers' inheritance; whether it changed."""
        with self.repository.lock:
            models = {served.name: served for served in self.repository.models()}
            failed = {name: {v: s for v, s in served.statuses.items() if s.error}
                      for name, served in models.items()}
            if self.board is not None and failed != self._failed:
                self.board.write(failed)
                self._failed = failed
            key = _fingerprint(models, failed if self.board is None else {})
            if key == self._published:
                return False
            global _shelf
            self.generation += 1
            _shelf = Shelf(models, self.shareable, self.generation,
                           self.board.read if self.board is not None else dict)
            self._published = key
            # collect what the replaced versions left, then take every object alive out of
            # the collector's generations: no collection in a worker writes to those pages
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            release()  # the freed versions' heap back to the system, not to the next fork
        logger.info("flask_predict: the master holds %s for the workers (generation %d)",
                    {name: sorted(served.versions) for name, served in models.items()},
                    self.generation)
        return True

    def _before_fork(self) -> None:
        if os.getpid() == self._pid:
            self.repository.lock.acquire()  # a load in progress finishes first
            self._forking = True

    def _after_fork(self) -> None:
        if self._forking:
            self._forking = False
            self.repository.lock.release()


def _fingerprint(models: Mapping[str, ServedModel],
                 failed: Mapping[str, Mapping[int, VersionStatus]]) -> object:
    """What a worker's inheritance depends on: each model's artifact and loaded versions (not
    the passing states of a replaced version), and the *failed* versions a worker cannot
    learn of otherwise."""
    return {name: (served.spec.base_path, served.spec.predictor,
                   repr(sorted(served.spec.options.items(), key=str)),
                   tuple(sorted(served.versions)), repr(failed.get(name)))
            for name, served in models.items()}
