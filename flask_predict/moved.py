"""The modules' old names: each module that moved into a package when the root was grouped by
part is still importable by its old dotted name, as the same module object
(``flask_predict.plugins`` is ``flask_predict.models.plugins``). A plugin or a gunicorn config
written for the old layout keeps working; new code uses the new names (docs/architecture.md).

Nothing is imported until someone asks for an old name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Sequence

PACKAGES = {
    "core": ("service", "scope", "record", "state", "deadline", "tabular", "transport", "limits",
             "tokens", "assembly", "startup", "runtime", "memory"),
    "models": ("repository", "served", "control", "artifacts", "plugins", "warmup", "watcher",
               "sharing", "shared_state"),
    "settings": ("config", "model_config", "tfserving_config", "vertex_storage"),
    "observability": ("metrics", "statistics", "traffic", "access_log", "logs", "queue_time"),
    "process": ("server", "server_logs", "sync_worker", "url_cache", "readiness", "rolling",
                "master"),
    "web": ("observe", "http_transport", "auth", "current"),
    "cli": ("demo",),
}
"""Package -> the modules that moved into it from the root (names relative to the root)."""

ROOT = __name__.rpartition(".")[0]
OLD_NAMES = {f"{ROOT}.{module}": f"{ROOT}.{package}.{module}"
             for package, modules in PACKAGES.items() for module in modules}
"""Old dotted name -> the module's name now."""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and hands back the module under its new name."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OLD_NAMES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default; exec_module swaps in the real module

    def exec_module(self, module: ModuleType) -> None:
        # the import system returns whatever sys.modules holds under the name once this returns
        sys.modules[module.__name__] = importlib.import_module(OLD_NAMES[module.__name__])


def install() -> None:
    """Let the old names import (once per process)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
