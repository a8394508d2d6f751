"""Model control, behind the service: the index of the configured models, loading and
unloading one in every worker, and the server's online switch.

Front ends (V2's repository extension over REST and gRPC, grps's online/offline, the status
page) reach these only as :class:`~flask_predict.core.service.ModelService` operations, next to
predict; they translate names and answers. No Flask here.

Only configured models can be loaded: the model config file (or ``PREDICT_MODELS``) names
them and their ``base_path``; a name from a request is looked up there, never made into a
path. Unloading a model adds its name to a file in the server's shared state folder, loading
it removes it; every worker's watcher reads that file on each poll (the same mechanism as
new versions on disk), so every worker follows within ``PREDICT_POLL_SECONDS`` and a worker
that starts later reads it too. The worker that answers asks for a poll at once and waits
(up to ``PREDICT_LOAD_WAIT_SECONDS``) until it has followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import FailedPrecondition, ModelExists, ModelNotFound, ModelNotReady, Unimplemented
from ..types import ModelSpec
from .lazy import LazyTier
from .repository import ModelRepository
from .shared_state import SharedFlag, StateDir
from .watcher import Watcher

ONLINE_FLAG = "online"
"""The online switch's flag, in the server's shared state folder."""


@dataclass(frozen=True)
class IndexEntry:
    """One configured model's version as the index lists it (or the model alone, when no
    version of it is known)."""

    name: str
    version: int | None
    state: str
    """The version's state (``AVAILABLE``, ``LOADING``, ``UNLOADING``, ``END``: TF Serving's
    names), or ``UNAVAILABLE`` for a model with no version known."""
    reason: str
    """Why it is not available (a load error, ``unloaded``), or empty."""


class ModelControl:
    """Control of one app's models, in this worker and, through the shared state folder,
    in every worker of its server.

    :param watcher: the worker's watcher, which loads and unloads; ``None`` when models
        were loaded once at ``init_app`` (then nothing can be loaded or unloaded).
    :param configured: the models configured at start (the watcher's later reads win).
    """

    def __init__(self, repository: ModelRepository, configured: tuple[ModelSpec, ...],
                 watcher: Watcher | None, load_wait_seconds: float) -> None:
        self.repository = repository
        self.configured = configured
        self.watcher = watcher
        self.load_wait_seconds = load_wait_seconds
        self.online_flag: SharedFlag | None = None
        self._state_dir: StateDir | None = None
        """Kept alive with the switch: a private folder goes when its object does."""

    # --- the online switch -----------------------------------------------------------------

    def open_online_switch(self, state_dir: StateDir, initial: bool) -> None:
        """Share the online switch through *state_dir*; the first worker to open it sets it
        to *initial*, later ones (a respawned worker) keep what it holds."""
        self._state_dir = state_dir
        self.online_flag = state_dir.flag(ONLINE_FLAG, initial)

    @property
    def online(self) -> bool:
        """Whether the server takes traffic (always, unless a switch was opened)."""
        return self.online_flag is None or self.online_flag.get()

    def set_online(self, online: bool) -> None:
        if self.online_flag is None:
            raise Unimplemented("this server has no online switch")
        self.online_flag.set(online)

    # --- load and unload -------------------------------------------------------------------

    @property
    def configured_any(self) -> bool:
        """Whether the configuration names a model (loaded or not), or a lazy tier serves
        its root's."""
        if self.repository.lazy is not None:
            return True
        watcher = self.watcher
        if watcher is not None:
            return bool(watcher.specs)
        return bool(self.configured) or bool(self.repository.names())

    @property
    def can_load(self) -> bool:
        """Whether models can be loaded and unloaded (the watcher runs with a shared
        unloaded set, or a lazy tier serves a root)."""
        return self.repository.lazy is not None or (
            self.watcher is not None and self.watcher.unloaded is not None)

    def index(self) -> list[IndexEntry]:
        """Every configured model, one entry per version this worker knows of, then the lazy
        tier's root (a version where this worker holds it)."""
        watcher = self.watcher
        configured = [spec.name for spec in
                      (watcher.specs if watcher is not None else self.configured)]
        unloaded = self._unloaded()
        served = {model.name: model for model in self.repository.models()}
        entries: list[IndexEntry] = []
        lazy = self.repository.lazy
        tier = [entry for entry in lazy.entries() if entry.name not in served
                and entry.name not in configured] if lazy is not None else []
        for name in configured + [name for name in served if name not in configured]:
            model = served.get(name)
            if model is None:
                reason = "unloaded" if name in unloaded else "not loaded yet"
                entries.append(IndexEntry(name, None, "UNAVAILABLE", reason))
            elif not model.statuses:
                entries.append(IndexEntry(name, None, "UNAVAILABLE", "no version folder found"))
            for version, status in sorted(model.statuses.items()) if model else ():
                reason = status.error or ("unloaded" if status.state == "END" else "")
                entries.append(IndexEntry(name, version, status.state, reason))
        for entry in tier:  # the root's models, loaded here or not
            held = lazy.find(entry.name) if lazy is not None else None
            numbers: list[int | None] = [None] if held is None else [*sorted(held.versions)]
            entries.extend(IndexEntry(entry.name, number, entry.state, entry.reason)
                           for number in numbers)
        return entries

    def load(self, name: str) -> None:
        """Serve configured model *name* in every worker (again); once this worker serves it,
        return. A model whose versions fail to load answers their errors (400); one still
        loading after ``PREDICT_LOAD_WAIT_SECONDS`` answers unavailable (503). A model of
        the lazy tier's root (one not configured) loads in this worker, as Triton's explicit
        mode loads a folder that appeared in its repository; the others load it on first
        use."""
        lazy = self.repository.lazy
        if lazy is not None and not self._configured(name):
            try:
                lazy.load(name)
            except ModelNotFound:
                raise ModelNotFound(f"failed to load '{name}': no model of that name in the "
                                    "model configuration or the model root")
            return
        watcher = self._watcher(name, "load")
        assert watcher.unloaded is not None
        watcher.unloaded.discard(name)
        if not watcher.poll_now(self.load_wait_seconds):
            raise ModelNotReady(f"failed to load '{name}': still loading; its state is in the "
                                "repository index")
        try:
            served = self.repository.model(name)
        except ModelNotFound:
            raise ModelNotFound(f"failed to load '{name}': it left the model configuration")
        if not served.ready:
            failed = sorted(v for v, status in served.statuses.items() if status.error)
            raise FailedPrecondition(f"failed to load '{name}': " + (
                f"version(s) {failed} did not load; the server's log has the cause" if failed
                else "no version found in its base_path"))

    def unload(self, name: str) -> None:
        """Stop serving configured model *name* in every worker; waits (up to
        ``PREDICT_LOAD_WAIT_SECONDS``) until this worker has dropped it. Requests already
        running on it finish. A model of the lazy tier is dropped here at once, and by the
        other workers at their next poll."""
        lazy = self.repository.lazy
        if lazy is not None and not self._configured(name):
            if not lazy.unload(name) and not lazy.exists(name):
                raise ModelNotFound(f"failed to unload '{name}': no model of that name in "
                                    "the model configuration or the model root")
            return
        watcher = self._watcher(name, "unload")
        assert watcher.unloaded is not None
        watcher.unloaded.add(name)
        watcher.poll_now(self.load_wait_seconds)

    def _watcher(self, name: str, verb: str) -> Watcher:
        """The watcher that loads and unloads, once *name* is known to be a configured model."""
        watcher = self.watcher
        if watcher is None or watcher.unloaded is None:
            raise Unimplemented("the model repository extension needs the model watcher: set "
                                "PREDICT_POLL_SECONDS above 0")
        if not self._configured(name):
            raise ModelNotFound(f"failed to {verb} '{name}': no model of that name in the "
                                "model configuration")
        return watcher

    # --- models added by name (SageMaker's multi-model API) ---------------------------------

    def add(self, name: str, url: str) -> None:
        """Add model *name* from folder *url* inside the lazy tier's root and load it in this
        worker (the others load it on first use); :class:`ModelExists` when it is served."""
        if self._configured(name):
            raise ModelExists(f"model {name!r} is already loaded")
        self._lazy().add(name, url)

    def added(self) -> dict[str, str]:
        """The models added by name, each with its folder."""
        lazy = self._lazy()
        return {name: lazy.url(name) for name in lazy.added.read()} \
            if lazy.added is not None else {}

    def remove(self, name: str) -> None:
        """Forget an added model in every worker (404 unless it was added)."""
        if not self._lazy().remove(name):
            raise ModelNotFound(f"model {name!r} is not loaded")

    def _lazy(self) -> LazyTier:
        lazy = self.repository.lazy
        if lazy is None:
            raise Unimplemented("models are added to the lazy tier: set PREDICT_LAZY_ROOT")
        return lazy

    def _configured(self, name: str) -> bool:
        """Whether *name* is a configured model (else it may be the lazy tier's)."""
        watcher = self.watcher
        if watcher is None:
            return any(spec.name == name for spec in self.configured)
        try:
            configured = watcher.read_specs()
        except Exception:  # a broken config file: the last one read stays in force
            configured = watcher.specs
        return any(spec.name == name for spec in configured)

    def _unloaded(self) -> frozenset[str]:
        watcher = self.watcher
        if watcher is None or watcher.unloaded is None:
            return frozenset()
        return watcher.unloaded.read()

    # --- this worker's loads ---------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Every configured model has a version loaded in this worker."""
        return self.repository.ready

    def after_first_load(self, callback: Callable[[], None]) -> None:
        """Call *callback* once this worker's first load is done (at once if it is)."""
        if self.watcher is None:
            callback()
        else:
            self.watcher.after_first_load(callback)

    def after_each_poll(self, callback: Callable[[], None]) -> None:
        """Call *callback* now and after every poll of the configuration and folders (only
        now without the watcher)."""
        if self.watcher is None:
            callback()
        else:
            self.watcher.after_each_poll(callback)

    def stop(self) -> None:
        """Stop the watcher (the app is closing)."""
        if self.watcher is not None:
            self.watcher.stop()
