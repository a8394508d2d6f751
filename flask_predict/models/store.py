"""Where a repository and its watcher are wired: one place for an app (through
:func:`flask_predict.core.assembly.assemble`), the gunicorn master's shared models and
``flask-predict check`` alike."""

from __future__ import annotations

from typing import Any, Callable

from ..settings.lazy import LazySettings
from ..types import ModelSpec
from .added_models import ADDED_MODELS, AddedModels
from .lazy import LazyTier
from .lazy_types import Events
from .shared_state import StateDir
from .repository import LoadListener, Loader, ModelRepository, PredictorLookup, SharedVersion
from .served import Shelf
from .watcher import UNLOADED_MODELS, Watcher


def model_store(specs: tuple[ModelSpec, ...], fixed: tuple[ModelSpec, ...] | None,
                config_file: str | None,
                poll_seconds: float | None, lookup: PredictorLookup, *,
                listener: LoadListener | None = None, shelf: Shelf | None = None,
                shared: SharedVersion | None = None, load: Loader | None = None,
                select: Callable[[ModelSpec], bool] | None = None, load_first: bool = False,
                unloaded: Any = None, warm: bool = True, lazy: LazySettings | None = None,
                wait_seconds: float = 30.0, events: Events | None = None,
                lazy_state: StateDir | None = None) -> tuple[ModelRepository, Watcher | None]:
    """A repository of *specs* and, unless *poll_seconds* is ``None``, the watcher that
    loads and reloads it (every *poll_seconds*; 0: once).

    A worker passes the *shelf* it inherited; the gunicorn master passes *shared* (which
    versions it loads), its *load* and *select* (the models with a shared version); an app
    passes the *unloaded* name set of V2's repository extension, and its *lazy* tier's
    settings (requests wait *wait_seconds* at most for another's load of a model; *events*
    counts its hits, misses, evictions and bytes; *lazy_state* is the folder its unloaded
    and added models are shared in).
    """
    repository = ModelRepository(lookup, listener, shelf, warm=warm and shared is None,
                                 shared=shared, load=load)
    if load_first:
        skipped = unloaded.read() if unloaded is not None else frozenset()
        repository.announce(spec for spec in specs if spec.name not in skipped)
    if lazy is not None:
        state = lazy_state or StateDir(None)  # an embedding app's own, private
        repository.lazy = LazyTier(lazy, lookup, wait_seconds=wait_seconds, listener=listener,
                                   events=events, warm=warm,
                                   unloaded=state.names(UNLOADED_MODELS),
                                   added=AddedModels(state.names(ADDED_MODELS)))
    if poll_seconds is None:
        return repository, None
    watcher = Watcher(repository, fixed, config_file, poll_seconds, specs,
                      load_first=load_first, unloaded=unloaded, select=select)
    if repository.lazy is not None:
        watcher.after_each_poll(repository.lazy.sweep)
    return repository, watcher
