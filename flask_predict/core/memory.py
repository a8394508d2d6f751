"""Give a worker's memory back to the system after a large request.

A large JSON body becomes millions of Python objects; once the request ends they are freed,
but glibc's allocator keeps the freed heap for the process (after one big free it also raises
its threshold for returning memory at once), so a worker that served one 50 MiB request can
hold a gigabyte for the rest of its life. After a request whose body was at least
:data:`RELEASE_AFTER_BYTES` long, :func:`release` asks glibc to return free memory
(``malloc_trim(0)``). It runs in gunicorn's ``post_request`` hook, after the response went
out; an app that embeds the extension keeps its process as it was unless it calls
:func:`release` itself. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any, Callable, MutableMapping

logger = logging.getLogger(__name__)

RELEASE_AFTER_BYTES = 4 * 1024 * 1024
"""Bodies (as inflated) at least this long mark their request for :func:`release`."""
ENVIRON_KEY = "flask_predict.release_memory"


def note_request_size(environ: MutableMapping[str, Any], size: int) -> None:
    """Mark the request for :func:`release` when its body was *size* bytes or more."""
    if size >= RELEASE_AFTER_BYTES:
        environ[ENVIRON_KEY] = True


def release(environ: MutableMapping[str, Any] | None = None) -> bool:
    """Return free heap memory to the system if the request of *environ* was large (or
    unconditionally, without *environ*). Whether glibc gave any back."""
    if environ is not None and not environ.pop(ENVIRON_KEY, False):
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))


_trim: list[Callable[[int], int] | None] = []


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (musl, macOS)."""
    if not _trim:
        function = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            function = libc.malloc_trim
            function.argtypes = [ctypes.c_size_t]
            function.restype = ctypes.c_int
        except (OSError, AttributeError):
            logger.debug("malloc_trim is not available; memory is not trimmed")
        _trim.append(function)
    return _trim[0]
