"""Models held once per machine: the gunicorn master loads them before it forks its workers,
and every worker serves them from the same memory pages.

Each sync worker is a process of its own, so a model each worker loads costs its memory once
per worker. A version whose plugin's manifest says ``shared`` (scikit-learn and XGBoost; a
custom class whose model sets ``"shared": true``) is loaded in the master instead
(:class:`MasterModels`): ``fork`` hands every worker the master's pages copy-on-write, and
``gc.freeze()`` keeps the garbage collector from writing to the objects loaded so far, so
those pages stay shared. The decision is made per version folder (:class:`~.shareable.Shareable`): a
version in a framework that does not survive a fork (TensorFlow) loads in each worker, and
the master never imports that framework. A worker's repository serves the shared versions it
inherited (the :class:`~flask_predict.models.served.Shelf`, :func:`inherited`) and loads the others.

The master's watcher polls the same configuration and version folders as the workers'. When
what it holds changes (a version loaded, replaced or dropped, a model added or removed), it
publishes the new set for the workers forked from then on, and the server replaces the
running workers one at a time (:mod:`flask_predict.process.rolling`). A dropped version is closed in
the master once every worker that inherited it has exited. A version that fails to load in
the master changes nothing served and replaces no worker: the workers read it from a file of
the server's state folder (:class:`FailureBoard`).

Fork safety: the master never warms up and predicts only where a plugin's load checks its own
fast path (XGBoost's), on one thread: it sizes every native pool to one thread before any
framework loads (OpenMP, BLAS), since a libgomp pool started in a parent hangs the next
parallel region of its forked child. Loading runs on the watcher's thread while the arbiter
goes on forking, reaping and timing out workers: a fork waits only while a plugin's framework
is imported and while a new set is published (``os.register_at_fork``), and a worker serves
only what was published before its fork. A predictor whose load leaves a thread or a
descriptor open is not shared (a fork keeps neither intact). Each worker sizes its pools after
the fork and calls ``Predictor.after_fork`` on what it inherited (XGBoost's ``nthread``).
"""

from __future__ import annotations

import gc
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..runtime.memory import release
from ..predictor import Predictor
from ..types import ModelSpec
from .loading import load_version
from .plugins import load_predictor_class
from .repository import NotShared
from .served import LoadedVersion, ServedModel, Shelf, VersionStatus, close_predictor
from .shareable import Shareable

logger = logging.getLogger(__name__)

_shelf: Shelf | None = None
"""What the master holds now; a forked worker inherits the value of its fork."""


def inherited() -> Shelf | None:
    """The models this process inherited from its gunicorn master; ``None`` in a process that
    loads everything itself (an embedding app, sharing turned off)."""
    return _shelf


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
    """In the gunicorn master: the shared versions, loaded (never warmed up) and reloaded from
    disk by a watcher on a thread of the master, published for every worker forked later.

    :param specs: the configured models (``Settings.models``).
    :param models: the raw ``PREDICT_MODELS`` value; *config_file* and *poll_seconds* as the
        workers' watchers read them.
    :param state_dir: the server's shared state folder, for the :class:`FailureBoard`
        (without it, a failure replaces the workers so that they show it).

    The arbiter never waits on a load: a fork waits only while a plugin's framework is
    imported (a fork must not inherit a half-imported module) and while a new set of
    versions is published. A version the master drops is closed once every worker forked
    while it was published has exited (:meth:`close_due`), and every version at the
    master's exit (:meth:`close_all`). Models unloaded through V2's repository extension
    stay loaded here (the workers stop serving them), so loading them again is immediate.
    """

    def __init__(self, specs: tuple[ModelSpec, ...], fixed: tuple[ModelSpec, ...] | None,
                 config_file: str | None,
                 poll_seconds: float, shareable: Shareable | None = None,
                 state_dir: str | None = None,
                 lookup: Callable[[str], type[Predictor]] = load_predictor_class) -> None:
        self.shareable = shareable or Shareable()
        self._plugin_class = lookup
        from .store import model_store

        self.repository, watcher = model_store(
            specs, fixed, config_file, poll_seconds, self._lookup, shared=self.shareable,
            load=self._load_alone, select=self.shareable.any_version)
        assert watcher is not None  # a poll interval was given
        self.watcher = watcher
        self.board = FailureBoard(Path(state_dir) / "shared_failures.json") \
            if state_dir else None
        self.generation = 0
        self._published: object = None
        self._failed: object = None
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()
        """Held while a framework is imported and while a new set is published; a fork
        waits for it (never for a load)."""
        self._forking = False
        self._next_worker: Any = None
        self._retiring: list[tuple[LoadedVersion, int]] = []
        """Versions dropped from what the master holds, each with the generation that
        dropped it: workers of an older generation may still serve them."""
        self._closing = threading.Lock()
        self._closed: set[int] = set()
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
        models = {served.name: served for served in self.repository.models()}
        failed = {name: {v: s for v, s in served.statuses.items() if s.error}
                  for name, served in models.items()}
        if self.board is not None and failed != self._failed:
            self.board.write(failed)
            self._failed = failed
        key = (_fingerprint(models, failed if self.board is None else {}),
               self.shareable.declined)
        if key == self._published:
            return False
        global _shelf
        with self._fork_lock:
            before = _held(_shelf)
            self.generation += 1
            _shelf = Shelf(models, self.shareable, self.generation,
                           self.board.read if self.board is not None else dict)
            self._published = key
            now = _held(_shelf)
            self._retiring += [(loaded, self.generation) for held, loaded in before.items()
                               if held not in now]
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

    # --- forks and the versions they may hold -----------------------------------------------

    def forking(self, worker: Any) -> None:
        """gunicorn's ``pre_fork``: *worker* is the next fork; it will hold the generation
        published when it forks (:data:`GENERATION_ATTRIBUTE`)."""
        self._next_worker = worker

    def close_due(self, workers: Iterable[Any]) -> None:
        """Close, on a thread of their own, the dropped versions no live worker of
        *workers* (gunicorn's worker objects) can hold any more."""
        oldest = min((getattr(w, GENERATION_ATTRIBUTE, 0) for w in workers),
                     default=self.generation + 1)
        due = [loaded for loaded, dropped in self._retiring if dropped <= oldest]
        if not due:
            return
        self._retiring = [(loaded, g) for loaded, g in self._retiring if loaded not in due]
        threading.Thread(target=self._close, args=(due,), name="flask-predict-close",
                         daemon=True).start()

    def close_all(self) -> None:
        """The master is exiting: close every version it loaded, held or dropped."""
        self.watcher.stop()
        held = list(_held(_shelf).values()) if _shelf is not None else []
        due = [loaded for loaded, _ in self._retiring] + held
        self._retiring = []
        self._close(due)

    def _close(self, versions: Iterable[LoadedVersion]) -> None:
        with self._closing:
            for loaded in versions:
                if id(loaded) not in self._closed:
                    self._closed.add(id(loaded))
                    close_predictor(loaded.predictor, loaded.name, loaded.version)
                    logger.info("flask_predict: model %r version %d closed in the master: "
                                "no worker serves it any more", loaded.name, loaded.version)

    def _lookup(self, name: str) -> type[Predictor]:
        with self._fork_lock:  # no fork inherits a framework half imported
            return self._plugin_class(name)

    def _load_alone(self, cls: type[Predictor], spec: ModelSpec, version: int,
                    path: str) -> Predictor:
        """``cls.from_path``, refused for sharing when it leaves a thread or a descriptor
        open (a fork would inherit a dead thread, or one descriptor for every worker)."""
        threads, fds = set(threading.enumerate()), open_descriptors()
        predictor = load_version(cls, path, spec.options)
        left = [t.name for t in threading.enumerate() if t not in threads and t.is_alive()]
        left += [f"descriptor {fd} ({target})" for fd, target in
                 sorted(open_descriptors().items()) if fd not in fds]
        if left:
            close_predictor(predictor, spec.name, version)
            self.shareable.decline(spec, version)
            logger.warning("flask_predict: model %r version %d left %s open after its load in "
                           "the master: it loads in each worker instead (a shared predictor "
                           "starts threads and opens files or sockets in after_fork)",
                           spec.name, version, ", ".join(left))
            raise NotShared(spec.name, version)
        return predictor

    def _before_fork(self) -> None:
        if os.getpid() == self._pid:
            self._fork_lock.acquire()
            self._forking = True
            if self._next_worker is not None:
                setattr(self._next_worker, GENERATION_ATTRIBUTE, self.generation)
                self._next_worker = None

    def _after_fork(self) -> None:
        if self._forking:
            self._forking = False
            self._fork_lock.release()


GENERATION_ATTRIBUTE = "flask_predict_generation"
"""Where the master keeps, on each gunicorn worker object, the generation it inherited."""


def open_descriptors() -> dict[int, str]:
    """This process's open file descriptors and what each is, gunicorn's worker heartbeat
    files left out (the arbiter makes one for every worker it forks); empty where
    ``/proc`` is not there."""
    found: dict[int, str] = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # closed since (the listing's own descriptor among them)
        if "wgunicorn-" not in target:
            found[int(name)] = target
    return found


def _held(shelf: Shelf | None) -> dict[int, LoadedVersion]:
    """Every version *shelf* holds, by identity."""
    if shelf is None:
        return {}
    return {id(loaded): loaded for served in shelf.models.values()
            for loaded in served.versions.values()}


def _fingerprint(models: Mapping[str, ServedModel],
                 failed: Mapping[str, Mapping[int, VersionStatus]]) -> object:
    """What a worker's inheritance depends on: each model's artifact and loaded versions (not
    the passing states of a replaced version), and the *failed* versions a worker cannot
    learn of otherwise."""
    return {name: (served.spec.base_path, served.spec.predictor,
                   repr(sorted(served.spec.options.items(), key=str)),
                   tuple(sorted(served.versions)), repr(failed.get(name)))
            for name, served in models.items()}
