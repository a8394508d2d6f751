"""The sharing policy: which versions of a model the gunicorn master loads once for every
worker (:class:`Shareable`), decided from the plugins' manifests, per version folder. What
the master does with them, its loads, publications and fork bookkeeping, is
:mod:`.sharing`'s."""

from __future__ import annotations

import os
from typing import Mapping

from ..errors import ConfigError
from ..storage import local_path
from ..storage.artifacts import version_folders, version_path
from ..types import ModelSpec
from .plugins import Manifest, detect_predictor, manifests


class Shareable:
    """Which versions the master loads: those whose plugin's manifest says ``shared`` for
    their model's options. The plugin is the one the model names, else the one detected on
    that version's folder, so a model whose version 1 is scikit-learn and version 2 a
    TensorFlow SavedModel has version 1 loaded once in the master and version 2 in each
    worker. Decided from manifests only (no framework is imported), the same in the master
    and every worker (a fork inherits this object), again when a version folder changes.

    A version whose load in the master left a thread or an open descriptor behind is
    *declined*: it loads in each worker from then on (:meth:`decline`)."""

    def __init__(self, found: Mapping[str, Manifest] | None = None) -> None:
        self._manifests = manifests() if found is None else dict(found)
        self._decided: dict[tuple[str, int], tuple[float, bool]] = {}
        self.declined: frozenset[tuple[str, int]] = frozenset()

    def __call__(self, spec: ModelSpec, version: int) -> bool:
        """Whether *version* of *spec* is loaded once, in the master."""
        key = (_spec_key(spec), version)
        if key in self.declined:
            return False
        path = version_path(local_path(spec.base_path), version)
        try:
            stamp = os.stat(path).st_mtime
        except OSError:
            return False
        decided = self._decided.get(key)
        if decided is not None and decided[0] == stamp:
            return decided[1]
        plugin = spec.predictor
        if plugin is None:
            try:
                plugin = detect_predictor(path, spec.options, self._manifests)
            except ConfigError:
                return False  # the worker's own load reports it
        manifest = self._manifests.get(plugin)
        shared = manifest is not None and manifest.shares(spec.options)
        self._decided[key] = (stamp, shared)
        return shared

    def any_version(self, spec: ModelSpec) -> bool:
        """Whether some version folder of *spec* is shared (the master syncs that model)."""
        return any(self(spec, version) for version in version_folders(local_path(spec.base_path)))

    def decline(self, spec: ModelSpec, version: int) -> None:
        """Load *version* of *spec* in each worker from now on."""
        self.declined = self.declined | {(_spec_key(spec), version)}


def _spec_key(spec: ModelSpec) -> str:
    return repr((spec.name, spec.base_path, spec.predictor,
                 sorted(spec.options.items(), key=str)))
