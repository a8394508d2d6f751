"""The lazy tier: every sub-folder of a repository root is a model, loaded in this worker the
first time a request names it and evicted, least recently used first, when the tier's
resident memory would pass its cap (docs/many-models.md).

Configured models stay the repository's, pinned. A model's size is its load's resident
growth (at least its files' size), loads made one at a time; a plugin's first load in a
process is made twice, the first paying the framework's one-time costs. A request for a
model being loaded waits for that one load, at most until its deadline; a failed load
answers its failure for ``retry_seconds``. Names are looked up in the root, never made
into a path outside it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable

from ..errors import (ConfigError, FailedPrecondition, InvalidInput, ModelExists, ModelNotFound,
                      ModelNotReady, ModelTooLarge, PredictError, Unimplemented)
from ..predictor import Predictor
from ..request.record import current_request
from ..runtime import memory
from ..settings.lazy import LazySettings
from ..storage import is_remote, local_path, resolve, shown
from ..storage.store import NothingListed
from ..storage.artifacts import files_bytes, tree_stamp, version_folders, version_path
from ..types import ModelSpec
from .added_models import AddedModels, inside, valid_name
from .lazy_types import Events, Listener, TierEntry
from .loading import load_version
from .plugins import plugin_for
from .root_folders import RootFolders
from .served import FAILED_TO_LOAD, LoadedVersion, ServedModel, VersionStatus, close_predictor
from .shared_state import NameSet
from .startup import cause_of
from .warmup import warm_up

logger = logging.getLogger(__name__)

Lookup = Callable[[str], "type[Predictor]"]
_looked_up: ContextVar[tuple[object, str] | None] = ContextVar("lazy_looked_up", default=None)
"""The request and model of this thread's last lookup: its hit or miss is counted once."""


@dataclass
class _Held:
    served: ServedModel
    bytes: int


class LazyTier:
    """The models of one root held by this worker, under a cap of *max_bytes*."""

    def __init__(self, settings: LazySettings, lookup: Lookup, *, wait_seconds: float = 30.0,
                 listener: Listener | None = None, events: Events | None = None,
                 warm: bool = True, unloaded: NameSet | None = None,
                 added: AddedModels | None = None,
                 measure: Callable[[], int] = memory.resident_bytes,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.root, self.max_bytes = settings.root, settings.max_bytes
        self.wait_seconds = wait_seconds
        """How long a request waits for another's load of the model it names, at most."""
        self.unloaded = unloaded
        """Names unloaded on request, shared by the server's workers: not loaded on demand."""
        self.added = added
        """Models added by name and folder (SageMaker's ``POST /models``), every worker's."""
        self._lookup, self._listener, self._events = lookup, listener, events
        self._warm, self._measure, self._clock = warm, measure, clock
        self._folders = RootFolders(self.root, clock)
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()  # one load at a time: each one's growth is its own
        self._held: OrderedDict[str, _Held] = OrderedDict()  # least recently used first
        self._loading: dict[str, threading.Event] = {}
        self._failed: dict[str, tuple[float, PredictError]] = {}
        self._sizes: dict[str, int] = {}  # measured at each model's last load
        self._primed: set[type] = set()  # plugins whose first load in this process was made
        self.loads = 0
        """Loads this worker made (each model's first use, and again after an eviction)."""

    @property
    def held_bytes(self) -> int:
        return sum(held.bytes for held in list(self._held.values()))

    def held(self) -> list[tuple[str, int]]:
        """The models loaded here with their bytes, least recently used first."""
        return [(name, held.bytes) for name, held in list(self._held.items())]

    def find(self, name: str) -> ServedModel | None:
        """*name*'s model if this worker holds it (no load)."""
        held = self._held.get(name)
        return held.served if held is not None else None

    def exists(self, name: str) -> bool:
        """Whether the root has a folder *name* (a remote root: one mirrored here, or that
        its last listing saw)."""
        return valid_name(name) and (os.path.isdir(self._folder(name, fetch=False)) or (
            is_remote(self.root) and name in self._folders.names()))

    def names(self) -> list[str]:
        """Every model of the root this worker knows of: the root's folders (a remote root's
        as last listed, :mod:`.root_folders`), the ones added and the ones it holds."""
        found = set(self._held) | set(self.added.read() if self.added is not None else ())
        return sorted(found | self._folders.names())

    def entries(self) -> list[TierEntry]:
        """Every model of :meth:`names` with its state here."""
        unloaded = self.unloaded.read() if self.unloaded is not None else frozenset()
        now = self._clock()
        entries = []
        for name in self.names():
            held = self._held.get(name)
            failed = self._failed.get(name)
            if held is not None:
                entries.append(TierEntry(name, "AVAILABLE", "", held.bytes))
            elif name in self._loading:
                entries.append(TierEntry(name, "LOADING", ""))
            elif failed is not None and failed[0] > now:
                entries.append(TierEntry(name, "END", failed[1].message))
            else:
                entries.append(TierEntry(name, "UNAVAILABLE",
                                         "unloaded" if name in unloaded else "not loaded"))
        return entries

    def model(self, name: str) -> ServedModel:
        """*name*'s model, loaded now if this worker does not hold it (the request waits for
        a load already running, at most until its deadline). A request counts one hit or
        one miss, however many times it looks its model up."""
        with self._lock:
            held = self._held.get(name)
            if held is not None:
                self._held.move_to_end(name)
        first = self._first_lookup(name)
        if held is not None:
            if first:
                self._note("hit", 1)
            return held.served
        if not valid_name(name):
            raise ModelNotFound(f"model {name!r} not found")
        failed = self._failed.get(name)
        if failed is not None and failed[0] > self._clock():
            raise type(failed[1])(failed[1].message)
        if self.unloaded is not None and name in self.unloaded.read():
            raise ModelNotFound(f"model {name!r} is unloaded: load it again to serve it")
        if not is_remote(self.root) and not self.exists(name):
            raise ModelNotFound(f"model {name!r} not found")
        if first:
            self._note("miss", 1)
        return self._single_flight(name)

    @staticmethod
    def _first_lookup(name: str) -> bool:
        """Whether the current request looks *name* up for the first time (outside a
        request: always)."""
        record = current_request.get()
        if record is None:
            return True
        key = (record, name)
        if _looked_up.get() == key:
            return False
        _looked_up.set(key)
        return True

    def load(self, name: str) -> tuple[ServedModel, bool]:
        """Load *name* on request (V2's repository load, SageMaker's ``POST /models``): its
        unloaded mark and its failure's back-off are cleared first. Whether this call
        loaded it (false: it was held already)."""
        if not valid_name(name):
            raise ModelNotFound(f"model {name!r} not found")
        if self.unloaded is not None and name in self.unloaded.read():
            self.unloaded.discard(name)
        self._failed.pop(name, None)
        held = self.find(name)
        if held is not None:
            return held, False
        return self.model(name), True

    def add(self, name: str, url: str) -> ServedModel:
        """Add model *name* from folder *url*, which must lie inside the root, and load it
        here (SageMaker's ``POST /models``); :class:`ModelExists` when it was added already."""
        if self.added is None:
            raise Unimplemented("adding models needs the server's state folder")
        if not isinstance(name, str) or not valid_name(name):
            raise InvalidInput(f"'model_name' {name!r} must be a plain folder name")
        relative = inside(self.root, url)
        if name in self.added.read() or self.find(name) is not None:
            raise ModelExists(f"model {name!r} is already loaded")
        self.added.add(name, relative)
        try:
            return self.load(name)[0]
        except PredictError:
            self.added.remove(name)
            raise

    def remove(self, name: str) -> bool:
        """Forget a model :meth:`add` added, in every worker; whether it had been."""
        if self.added is None or not valid_name(name) or not self.added.remove(name):
            return False
        self.unload(name)
        return True

    def url(self, name: str) -> str:
        """Where model *name*'s folder is (inside the root)."""
        relative = self.added.folder(name) if self.added is not None else None
        return f"{self.root}/{relative or name}"

    def unload(self, name: str) -> bool:
        """Stop serving *name*: evicted here, and marked unloaded for every worker (each drops
        it at its next poll, :meth:`sweep`). Whether this worker held it."""
        if self.unloaded is not None and valid_name(name):
            self.unloaded.add(name)
        return self._evict(name, "unloaded")

    def sweep(self) -> None:
        """Drop the models another worker unloaded (after each poll of the watcher)."""
        if self.unloaded is None or not self._held:
            return
        for name in self.unloaded.read() & set(self._held):
            self._evict(name, "unloaded by another worker")

    def close(self) -> None:
        """Retire every model held (worker exit)."""
        for name in list(self._held):
            self._evict(name, "closed with this worker")

    def _single_flight(self, name: str) -> ServedModel:
        with self._lock:
            held = self._held.get(name)
            running = self._loading.get(name)
            if held is None and running is None:
                self._loading[name] = threading.Event()
        if held is not None:
            return held.served
        if running is not None:  # another thread loads it: wait for that one load
            if not running.wait(self._wait_left()):
                raise ModelNotReady(f"model {name!r} is still loading; try again")
            held = self._held.get(name)
            if held is not None:
                return held.served
            failed = self._failed.get(name)
            if failed is not None:
                raise type(failed[1])(failed[1].message)
            raise ModelNotReady(f"model {name!r} was evicted as it loaded; try again")
        try:
            return self._load(name)
        finally:
            with self._lock:
                self._loading.pop(name).set()

    def _wait_left(self) -> float:
        """How long a request may wait for another's load: the load wait, or less where the
        client's deadline comes first."""
        record = current_request.get()
        if record is not None and record.deadline is not None:
            return max(0.0, min(self.wait_seconds, record.deadline - time.monotonic()))
        return self.wait_seconds

    def _load(self, name: str) -> ServedModel:
        spec = ModelSpec(name=name, base_path=self.url(name))
        started = time.perf_counter()
        version = 0
        predictor = None
        try:
            with self._load_lock:
                folder = self._folder(name, fetch=True)
                versions = version_folders(folder)
                if not versions:
                    raise ModelNotFound(f"model {name!r} not found: no version in its folder")
                version = max(spec.serves(versions))
                path = version_path(folder, version)
                cls = self._lookup(plugin_for(spec, path))  # imports before measuring
                if cls not in self._primed:  # the framework's one-time costs, not the model's
                    close_predictor(load_version(cls, path, {}), name, version)
                    self._primed.add(cls)
                self._make_room(self._sizes.get(name, 0))
                loaded, size = self._measured(spec, version, cls, path)
                predictor = loaded.predictor
                if size > self.max_bytes:  # the heap regrowing after a trim, or the model?
                    close_predictor(predictor, name, version)
                    predictor = None
                    loaded, again = self._measured(spec, version, cls, path)
                    predictor, size = loaded.predictor, min(size, again)
        except Exception as exc:
            if predictor is not None:
                close_predictor(predictor, name, version)
            raise self._failure(name, version, exc, started)
        self._sizes[name] = size
        if self.unloaded is not None and name in self.unloaded.read():  # meanwhile
            close_predictor(predictor, name, version)
            raise ModelNotFound(f"model {name!r} was unloaded as it loaded")
        if size > self.max_bytes:
            close_predictor(predictor, name, version)
            raise self._failure(name, version, ModelTooLarge(
                f"model {name!r} needs {size} bytes, more than the lazy tier's cap of "
                f"{self.max_bytes} (PREDICT_LAZY_MAX_BYTES)"), started)
        served = ServedModel(spec, {version: loaded}, {version: VersionStatus(
            version, "AVAILABLE", stamp=tree_stamp(path))})
        self._make_room(size)
        with self._lock:
            self._held[name] = _Held(served, size)
        self.loads += 1
        seconds = self._told("loaded", name, version, started)
        self._note("load", seconds)
        self._note("models", len(self._held))
        self._note("bytes", self.held_bytes)
        logger.info("model %r: version %d loaded on demand in %.2fs (%d bytes; the lazy tier "
                    "holds %d models, %d bytes)", name, version, seconds, size,
                    len(self._held), self.held_bytes)
        return served

    def _measured(self, spec: ModelSpec, version: int, cls: type[Predictor], path: str
                  ) -> tuple[LoadedVersion, int]:
        """A load and warm-up of *path*, and its resident growth (at least its files)."""
        before = self._measure()
        predictor = load_version(cls, path, {})
        loaded = LoadedVersion(spec, version, predictor, predictor.metadata(), path)
        try:
            if self._warm:
                warm_up(predictor, path)
        except Exception:
            close_predictor(predictor, spec.name, version)
            raise
        return loaded, max(self._measure() - before, files_bytes(path))

    def _folder(self, name: str, fetch: bool) -> str:
        """The local folder of model *name* (a remote root's mirror, synced when *fetch*)."""
        uri = self.url(name)
        if not is_remote(self.root):
            return uri
        if not fetch:
            return local_path(uri)
        try:
            return resolve(uri)
        except NothingListed:
            raise ModelNotFound(f"model {name!r} not found")

    def _make_room(self, size: int) -> None:
        """Evict the least recently used until *size* more bytes fit under the cap."""
        while self._held and self.held_bytes + size > self.max_bytes:
            oldest = next(iter(self._held))
            self._evict(oldest, "evicted (least recently used)")
            self._note("evicted", 1)

    def _evict(self, name: str, why: str) -> bool:
        with self._lock:
            held = self._held.pop(name, None)
        if held is None:
            return False
        for loaded in held.served.versions.values():
            loaded.retire()  # closed once its last request ends
            self._told("unloaded", name, loaded.version)
            self._told("evicted", name, loaded.version)  # its series leave this worker
        memory.release()
        self._note("models", len(self._held))
        self._note("bytes", self.held_bytes)
        logger.info("model %r: %s, %d bytes freed", name, why, held.bytes)
        return True

    def _failure(self, name: str, version: int, exc: Exception, started: float
                 ) -> PredictError:
        """The error *name*'s failed load answers until its back-off ends; logged once."""
        if isinstance(exc, PredictError) and exc.http_status < 500 \
                and not isinstance(exc, ConfigError):
            error: PredictError = exc
        else:
            error = FailedPrecondition(f"model {name!r} {FAILED_TO_LOAD}")
        self._failed[name] = (self._clock() + self.settings.retry_seconds, error)
        seconds = self._told("failed", name, version, started)
        logger.error("flask_predict: model %r of the lazy tier did not load from %s (after "
                     "%.2fs; tried again after %gs): %s", name, shown(self.url(name)),
                     seconds, self.settings.retry_seconds, cause_of(exc))
        return error

    def _told(self, event: str, name: str, version: int, started: float | None = None
              ) -> float:
        seconds = 0.0 if started is None else time.perf_counter() - started
        if self._listener is not None:
            self._listener(event, name, version, seconds)
        return seconds

    def _note(self, event: str, value: float) -> None:
        if self._events is not None:
            self._events(event, value)
