"""Where a repository and its watcher are wired: one place for an app (through
:func:`flask_predict.core.assembly.assemble`), the gunicorn master's shared models and
``flask-predict check`` alike."""

from __future__ import annotations

from typing import Any, Callable

from ..types import ModelSpec
from .repository import LoadListener, Loader, ModelRepository, PredictorLookup, SharedVersion
from .served import Shelf
from .watcher import Watcher


def model_store(specs: tuple[ModelSpec, ...], fixed: tuple[ModelSpec, ...] | None,
                config_file: str | None,
                poll_seconds: float | None, lookup: PredictorLookup, *,
                listener: LoadListener | None = None, shelf: Shelf | None = None,
                shared: SharedVersion | None = None, load: Loader | None = None,
                select: Callable[[ModelSpec], bool] | None = None, load_first: bool = False,
                unloaded: Any = None, warm: bool = True
                ) -> tuple[ModelRepository, Watcher | None]:
    """A repository of *specs* and, unless *poll_seconds* is ``None``, the watcher that
    loads and reloads it (every *poll_seconds*; 0: once).

    A worker passes the *shelf* it inherited; the gunicorn master passes *shared* (which
    versions it loads), its *load* and *select* (the models with a shared version); an app
    passes the *unloaded* name set of V2's repository extension.
    """
    repository = ModelRepository(lookup, listener, shelf, warm=warm and shared is None,
                                 shared=shared, load=load)
    if load_first:
        skipped = unloaded.read() if unloaded is not None else frozenset()
        repository.announce(spec for spec in specs if spec.name not in skipped)
    if poll_seconds is None:
        return repository, None
    return repository, Watcher(repository, fixed, config_file, poll_seconds, specs,
                               load_first=load_first, unloaded=unloaded, select=select)
