"""This server process's settings, read from its environment once: in the master by the
configuration check at start, in each worker as it starts (once its index is set), then
handed to every other hook and to the app the worker builds. Nothing here runs when the
extension is embedded in another app."""

from __future__ import annotations

import os

from ..settings.app import read_settings
from ..settings.config import Settings
from ..settings.environ import server_config

_read: tuple[int, Settings] | None = None


def read() -> Settings:
    """Read this process's environment into :class:`Settings` (a worker, forked with its
    own index, reads its own); raises :class:`~flask_predict.errors.ConfigError`."""
    global _read
    _read = (os.getpid(), read_settings(server_config()))
    return _read[1]


def current() -> Settings:
    """The settings this process read (:func:`read`), reading them if it has not."""
    if _read is None or _read[0] != os.getpid():
        return read()
    return _read[1]


def read_here() -> Settings | None:
    """The settings this process read as a server's, or ``None`` outside a server (an app
    built without gunicorn reads its own config)."""
    return _read[1] if _read is not None and _read[0] == os.getpid() else None
