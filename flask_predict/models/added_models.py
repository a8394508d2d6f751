"""Models added to the lazy tier by name and folder (SageMaker's multi-model ``POST
/models``: a ``model_name`` and the ``url`` of its folder), kept for every worker of the
server in its shared state folder.

A folder must lie inside the lazy tier's root: its path is resolved (links followed) and
refused unless it is below the root, each part a plain, visible name; nothing a request
sends becomes any other path.
"""

from __future__ import annotations

import os

from ..errors import InvalidInput
from ..storage import is_remote
from .shared_state import NameSet

ADDED_MODELS = "added_models"
"""The name set, in the server's shared state folder, of the models added by name."""


def valid_name(name: str) -> bool:
    """Whether *name* can be a model of the root: one plain folder name, not hidden."""
    return (bool(name) and not name.startswith(".") and len(name) <= 255
            and not any(c in name for c in "/\\\0") and name.isprintable())


def inside(root: str, url: str) -> str:
    """The path of folder *url* relative to *root*, refused (400) unless it lies below it."""
    if not isinstance(url, str) or not url:
        raise InvalidInput("'url' must be the path of the model's folder")
    if is_remote(root):
        relative = url[len(root) + 1:] if url.startswith(root + "/") else ""
    else:
        real_root = os.path.realpath(root)
        real = os.path.realpath(url if os.path.isabs(url) else os.path.join(root, url))
        relative = os.path.relpath(real, real_root) if real.startswith(real_root + os.sep) \
            else ""
    parts = relative.strip("/").split("/")
    if not relative or not all(valid_name(part) for part in parts):
        raise InvalidInput(f"'url' {url!r} is not a folder inside the model root "
                           f"({root}): models are added from the root only")
    return "/".join(parts)


class AddedModels:
    """Model name -> its folder inside the root, shared by the server's workers (one
    ``name/relative/path`` entry of a :class:`~.shared_state.NameSet` each)."""

    def __init__(self, names: NameSet) -> None:
        self._names = names

    def read(self) -> dict[str, str]:
        pairs = (entry.split("/", 1) for entry in self._names.read() if "/" in entry)
        return {name: relative for name, relative in sorted(pairs)}

    def folder(self, name: str) -> str | None:
        """*name*'s folder relative to the root, when it was added."""
        return self.read().get(name)

    def add(self, name: str, relative: str) -> None:
        self._names.add(f"{name}/{relative}")

    def remove(self, name: str) -> bool:
        """Forget *name*; whether it had been added."""
        relative = self.folder(name)
        if relative is None:
            return False
        self._names.discard(f"{name}/{relative}")
        return True
