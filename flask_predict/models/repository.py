"""The model repository: which models exist, their versions, labels and default version.

A model's versions are the numbered sub-folders of its ``base_path``, as in TF Serving.
Names and versions from URLs are looked up here, never joined into paths.

Each worker loads its own models, except those the gunicorn master loaded for every worker
before it forked (a :class:`.served.Shelf`, :mod:`.sharing`), which it serves as inherited.
:meth:`ModelRepository.sync` loads new versions and unloads dropped ones; every change
swaps a whole mapping, so a request sees a complete, consistent set of versions.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable, Mapping

from .startup import LoadFailure, check_first_load, cause_of
from ..errors import ConfigError, ModelNotFound
from ..predictor import Predictor
from ..storage import fetch, is_remote, local_path, shown
from ..types import ModelSpec
from ..storage.artifacts import artifact_file, tree_stamp, version_folders, version_path
from .lazy import LazyTier
from .loading import load_version
from .plugins import plugin_for
from .served import (FAILED_TO_LOAD, LoadedVersion, ServedModel, Shelf, VersionStatus, artifact_key,
                     close_predictor)
from .warmup import warm_up

logger = logging.getLogger(__name__)

PredictorLookup = Callable[[str], "type[Predictor]"]
Loader = Callable[["type[Predictor]", ModelSpec, int, str], Predictor]
"""``load(cls, spec, version, path)`` -> the predictor (default: ``cls.from_path``)."""
SharedVersion = Callable[[ModelSpec, int], bool]
"""Whether a version is loaded once, in the gunicorn master (:class:`.shareable.Shareable`)."""
LoadListener = Callable[[str, str, int, float], None]
"""Told ``(event, model, version, seconds)`` when a version is ``"loaded"``, ``"failed"`` to
load, or ``"unloaded"`` (retired; seconds 0): what the metrics count."""


class ModelRepository:
    """Every configured model of one app, in one worker.

    Readers never lock: each change builds a new :class:`ServedModel` and a new mapping of
    models and swaps it in with one assignment, so a request sees either the old set of
    versions or the new one, never a half-loaded model. :meth:`sync` holds a lock so that
    only one thread loads at a time. A version that leaves the served set is retired at
    once: closed when the last request holding it finishes (see :mod:`.loaded`).
    """

    def __init__(self, lookup: PredictorLookup, listener: LoadListener | None = None,
                 shelf: Shelf | None = None, warm: bool = True,
                 shared: SharedVersion | None = None, load: Loader | None = None) -> None:
        self._lookup = lookup
        self._listener = listener
        self._shelf = shelf
        """What the gunicorn master loaded for this worker (``None``: it loads everything)."""
        self._warm = warm
        """Replay warm-up requests on a new version (never in the master: no prediction
        may run there, see :mod:`flask_predict.models.sharing`)."""
        self._only = shared
        """In the gunicorn master: load only the versions this says are shared; they are
        the master's to close, once no worker holds them (``None``: a worker's, or an
        embedding app's, repository)."""
        self._load = load or _from_path
        self._models: Mapping[str, ServedModel] = {}
        self.lock = threading.Lock()
        """Held while :meth:`sync` changes the models (the master forks only outside it)."""
        self._synced = False
        self.serve_the_rest = False
        """``PREDICT_EXIT_ON_LOAD_ERROR`` false: readiness leaves out the models that did not
        load, once no version of theirs is loading."""
        self.first_sync = threading.Event()
        """Set once the first :meth:`sync` is done (every configured model tried once)."""
        self._warned: set[str] = set()
        self._fetched: set[str] = set()  # remote base paths whose first sync was tried
        self._problems: dict[str, str] = {}  # why one failed: its model's cause until it loads
        self.lazy: LazyTier | None = None
        """The models of ``PREDICT_LAZY_ROOT``, behind the configured ones (pinned)."""

    @classmethod
    def load(cls, specs: Iterable[ModelSpec], lookup: PredictorLookup,
             listener: LoadListener | None = None, shelf: Shelf | None = None,
             exit_on_error: bool = True) -> ModelRepository:
        """Load every model now, then apply the start-up rule
        (:func:`.startup.check_first_load`): a model that did not load raises
        :class:`.startup.StartFailed`, unless *exit_on_error* is false."""
        repository = cls(lookup, listener, shelf)
        repository.sync(specs)
        check_first_load(repository.models(), exit_on_error)
        return repository

    def announce(self, specs: Iterable[ModelSpec]) -> None:
        """Make *specs* known at once, before the first :meth:`sync` loads them: a request
        for one is answered "not ready" (503), not "not found" (404)."""
        with self.lock:
            for spec in specs:
                if spec.name not in self._models:
                    self._publish(ServedModel(spec))

    # --- lookups (request time) ---------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._models)

    def models(self) -> list[ServedModel]:
        models = self._models
        return [models[name] for name in sorted(models)]

    def model(self, name: str) -> ServedModel:
        """A configured model, else the lazy tier's (loaded on first use)."""
        served = self._models.get(name)
        if served is None:
            if self.lazy is not None:
                return self.lazy.model(name)
            raise ModelNotFound(f"model {name!r} not found")
        return served

    def get(self, name: str, version: str | int | None = None,
            label: str | None = None, version_name: str | None = None) -> LoadedVersion:
        """The loaded version serving *name* and one of: a *version* number, a *label*, a
        *version_name* (label, else number), or none of them (the default version)."""
        served = self.model(name)
        if label is not None:
            return served.label(label)
        if version_name is not None:
            return served.named(version_name)
        if version is not None:
            return served.version(version)
        return served.default()

    @property
    def ready(self) -> bool:
        """True once the configured models are loaded in this worker: false before the
        first :meth:`sync` and while a configured model has no version loaded. Replacing
        a version never makes it false, since the old version serves until the new one
        is loaded. With :attr:`serve_the_rest`, a model that failed (and loads nothing now)
        does not count, as long as one model is served."""
        models = self._models.values()
        if not self.serve_the_rest:
            return self._synced and all(served.ready for served in models)
        return (self._synced and any(served.ready for served in models)
                and all(served.ready or not served.loading for served in models))

    # --- loading --------------------------------------------------------------------------------

    def sync(self, specs: Iterable[ModelSpec]) -> None:
        """Bring the loaded versions in line with *specs* and the folders on disk.

        New versions are loaded (and warmed up) before old ones are dropped; a version
        that fails to load is recorded in the statuses and the versions already served
        stay. Each model's new state is published as soon as it is ready. Versions that
        leave the policy are closed at the next call, so requests still running on them
        can finish. A failure is logged as one line, except in the first sync: whoever
        started it reports what did not load (:mod:`.startup`).
        """
        with self.lock:
            specs = list(specs)
            # a remote path's first download, here where its model loads (KServe's load)
            self._problems.update(fetch((spec.base_path, spec.serves) for spec in specs
                                        if is_remote(spec.base_path)
                                        and spec.base_path not in self._fetched))
            self._fetched.update(spec.base_path for spec in specs)
            problems = self._problems
            for spec in specs:  # known at once, not ready until loaded (503, not 404)
                if spec.name not in self._models:
                    self._publish(ServedModel(spec))
            wanted = {spec.name for spec in specs}
            failed = self._shelf.failed() if self._shelf is not None else {}
            for name in [name for name in self._models if name not in wanted]:
                logger.info("model %r removed from the configuration", name)
                removed = self._models[name]
                self._models = {k: v for k, v in self._models.items() if k != name}
                self._retire(removed.versions.values())
            # what a worker inherited serves first, before the loads of its own
            for spec in sorted(specs, key=lambda spec: self._held(spec) is None):
                served = self._models.get(spec.name)
                if served is not None and artifact_key(served.spec) != artifact_key(spec):
                    old = served.versions.values()
                    self._publish(ServedModel(spec))
                    self._retire(old)
                    served = None
                if served is None:
                    served = ServedModel(spec)
                else:
                    served = ServedModel(spec, served.versions, served.statuses)
                self._refresh(served, failed.get(spec.name, {}),
                              problems.get(spec.base_path))
            # the configuration's order, which is also the order of names()
            self._models = {spec.name: self._models[spec.name] for spec in specs}
            self._synced = True
            self.first_sync.set()

    def _publish(self, served: ServedModel) -> None:
        self._models = {**self._models, served.name: served}

    def _refresh(self, served: ServedModel, failed: Mapping[int, VersionStatus],
                 problem: str | None = None) -> None:
        """Load the versions of *served*'s model its policy wants and drop the others. A
        shared version (:class:`~flask_predict.models.shareable.Shareable`) is the master's: a worker
        takes it from what it inherited, or waits for a worker forked after the master
        loaded it (the master's failures since the fork: *failed*); the master loads only
        those."""
        spec = served.spec
        folder = local_path(spec.base_path)
        on_disk = version_folders(folder)
        empty = f"model {spec.name!r}: no numbered version folder in {shown(spec.base_path)!r}"
        if not on_disk:
            if self._synced:  # at start, the start-up rule says it
                self._warn_once(f"{empty}; the versions loaded stay served")
            self._publish(ServedModel(spec, served.versions, served.statuses, problem))
            return
        self._warned.discard(f"{empty}; the versions loaded stay served")
        # versions dropped by the previous sync have been closed since: UNLOADING -> END
        statuses = {v: (VersionStatus(v, "END", stamp=s.stamp) if s.state == "UNLOADING" else s)
                    for v, s in served.statuses.items() if v in on_disk}
        source = {v: self._source(spec, v) for v in on_disk}
        inherited = self._shelf.statuses(spec, failed) if self._shelf is not None else {}
        for v, status in inherited.items():
            if v in on_disk and source[v] == "shelf" and v not in served.versions:
                if status.error and served.statuses.get(v) != status:
                    self._log_failure(spec, v, status.cause or status.error)
                statuses[v] = status
        versions = dict(served.versions)

        def usable(version: int) -> bool:
            # a version that failed is tried again once something in its folder changes
            status = statuses.get(version)
            return not (status and status.error and status.stamp == tree_stamp(
                version_path(folder, version)))

        candidates = [v for v in on_disk if v in versions or usable(v)]
        # a shared version the master had not loaded at the fork: a worker forked after
        # it has serves it; this one serves what it inherited meanwhile
        held = self._held(spec)
        pending = {v for v in candidates if source[v] == "shelf" and v not in versions
                   and (held is None or v not in held.versions)}
        for version in spec.serves(candidates) & pending:
            statuses[version] = VersionStatus(version, "LOADING", stamp=on_disk[version])
        candidates = [v for v in candidates if v not in pending]
        wanted = spec.serves(candidates)
        to_load = sorted(v for v in wanted - set(versions) if source[v] != "other")
        if to_load:
            for version in to_load:
                statuses[version] = VersionStatus(version, "LOADING", stamp=on_disk[version])
            self._publish(ServedModel(spec, dict(versions), dict(statuses)))
        for version in to_load:
            loaded = self._version(spec, version, source[version], statuses)
            if loaded is not None:
                versions[version] = loaded
        # a version removed from disk is unloaded; one that failed to load leaves the
        # policy to choose among those that did (the master keeps its newest shared
        # version while the workers load a newer one of their own: their fallback if it
        # fails to load there)
        present = [v for v in on_disk if v in versions]
        keep = spec.serves(present)
        dropped = [versions.pop(v) for v in sorted(set(versions) - keep)]
        for v in versions:
            statuses[v] = VersionStatus(v, "AVAILABLE", stamp=on_disk[v])
        for loaded in dropped:
            if loaded.version in on_disk:
                statuses[loaded.version] = VersionStatus(loaded.version, "UNLOADING",
                                                         stamp=on_disk[loaded.version])
        self._publish(ServedModel(spec, versions, statuses))
        self._retire(dropped)
        for loaded in dropped:  # in the master, each worker retires it as it is replaced
            logger.info("model %r: version %d %s", spec.name, loaded.version,
                        "retired (closed once its last request ends)" if self._only is None
                        else "dropped by the master; closed once no worker holds it")

    def _source(self, spec: ModelSpec, version: int) -> str:
        """Where *version* of *spec* comes from here: ``"load"`` (this process loads it),
        ``"shelf"`` (a worker takes it from the master) or ``"other"`` (the master leaves
        it to the workers)."""
        if self._only is not None:
            return "load" if self._only(spec, version) else "other"
        if self._shelf is not None and self._shelf.shared(spec, version):
            return "shelf"
        return "load"

    def _held(self, spec: ModelSpec) -> ServedModel | None:
        return self._shelf.held(spec) if self._shelf is not None else None

    def _version(self, spec: ModelSpec, version: int, source: str,
                 statuses: dict[int, VersionStatus]) -> LoadedVersion | None:
        """*version* loaded here, or taken from the master; ``None`` when it did not load
        (its status says why) or the master had not loaded it at the fork."""
        if source == "load":
            stamp = tree_stamp(version_path(local_path(spec.base_path), version))
            return self._load_version(spec, version, stamp, statuses)
        held = self._held(spec)
        assert held is not None  # pending versions are not loaded
        return self._take(spec, held.versions[version])

    def _load_version(self, spec: ModelSpec, version: int, stamp: float,
                      statuses: dict[int, VersionStatus]) -> LoadedVersion | None:
        path = version_path(local_path(spec.base_path), version)
        start = time.perf_counter()
        predictor = None
        try:
            name = plugin_for(spec, path)
            logger.info("loading model %r version %d from %s with plugin %r", spec.name,
                        version, shown(path), name)
            predictor = self._load(self._lookup(name), spec, version, path)
            loaded = LoadedVersion(spec, version, predictor, predictor.metadata(), path,
                                   owned=self._only is None)
            warmed = warm_up(predictor, path) if self._warm else 0
        except NotShared:
            del statuses[version]  # the workers load it
            return None
        except Exception as exc:
            cause = cause_of(exc)
            seconds = self._told("failed", spec.name, version, start)
            if predictor is not None:
                close_predictor(predictor, spec.name, version)
            # one line; at start the start-up rule reports it, for the whole server at once;
            # in the master the workers log it, each once, as they take its status over
            failure = LoadFailure(spec.name, version, artifact_file(path), cause)
            logger.log(logging.ERROR if self._synced else logging.DEBUG,
                       "flask_predict: %s (after %.2fs)%s", failure if self._warm else
                       f"model {spec.name!r} version {version}: not loaded in the master: "
                       f"{cause}", seconds, "; the versions served stay" if self._warm else "")
            if not isinstance(exc, ConfigError):
                logger.debug("model %r version %d: the load's traceback", spec.name, version,
                             exc_info=exc)
            statuses[version] = VersionStatus(version, "END", error=FAILED_TO_LOAD,
                                              cause=cause, stamp=stamp)
            return None
        logger.info("model %r: version %d loaded with %s in %.2fs%s", spec.name, version,
                    type(predictor).__name__, self._told("loaded", spec.name, version, start),
                    f" ({warmed} warm-up requests)" if warmed else "")
        return loaded

    def _log_failure(self, spec: ModelSpec, version: int, cause: str) -> None:
        """A version the master failed to load, once per worker, as a worker's own load
        would log it (at start, the start-up rule reports it)."""
        logger.log(logging.ERROR if self._synced else logging.DEBUG, "flask_predict: %s",
                   LoadFailure(spec.name, version,
                               artifact_file(version_path(local_path(spec.base_path), version)), cause))

    def _take(self, spec: ModelSpec, theirs: LoadedVersion) -> LoadedVersion:
        """This worker's hold on a version the master loaded: set up per process, warmed up
        here (the master never predicts), never closed here."""
        start = time.perf_counter()
        predictor = theirs.predictor
        warmed = 0
        try:
            predictor.after_fork()
            warmed = warm_up(predictor, theirs.path) if self._warm else 0
        except Exception as exc:
            logger.error("model %r version %d: its warm-up in this worker failed (it serves "
                         "as loaded in the master): %s", spec.name, theirs.version,
                         cause_of(exc))
        logger.info("model %r: version %d shared from the master in %.2fs%s", spec.name,
                    theirs.version, self._told("loaded", spec.name, theirs.version, start),
                    f" ({warmed} warm-up requests)" if warmed else "")
        return LoadedVersion(spec, theirs.version, predictor, theirs.metadata, theirs.path,
                             owned=False)

    def _told(self, event: str, name: str, version: int, start: float | None = None) -> float:
        """Tell the listener of *event*; the seconds since *start*."""
        seconds = 0.0 if start is None else time.perf_counter() - start
        if self._listener is not None:
            self._listener(event, name, version, seconds)
        return seconds

    def _retire(self, versions: Iterable[LoadedVersion]) -> None:
        for loaded in list(versions):
            loaded.retire()
            self._told("unloaded", loaded.name, loaded.version)

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def close(self) -> None:
        """Retire every loaded version (worker exit); each closes once it is unused."""
        with self.lock:
            models, self._models = self._models, {}
        if self.lazy is not None:
            self.lazy.close()
        for served in models.values():
            self._retire(served.versions.values())
            for number in sorted(served.versions):
                logger.info("model %r: version %d retired with this worker", served.name,
                            number)


class NotShared(Exception):
    """Raised by the master's loader: the version loads in each worker instead."""


def _from_path(cls: type[Predictor], spec: ModelSpec, version: int, path: str) -> Predictor:
    return load_version(cls, path, spec.options)
