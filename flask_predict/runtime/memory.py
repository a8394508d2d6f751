"""How a worker's heap is given back to the system: glibc's thresholds, and a trim after a
large request.

glibc's allocator adapts two thresholds as it goes: blocks from 128 KiB up are mapped on
their own until one such block is freed, which raises the mapping threshold to that block's
size (up to 32 MiB) and the threshold for giving back the top of the heap to twice that.
A worker that serves messages of a few MiB then lands on thresholds of the size of its own
buffers, and gives megabytes back and faults them in again on every call (a 10,000-row V2
gRPC call: 23 page faults and a quarter more CPU a call). :func:`fix_thresholds` sets them
once, agreeing with the trim below: blocks of :data:`MMAP_THRESHOLD_BYTES` or more (the
size that makes a request large) get a mapping of their own, unmapped when freed; smaller
ones come from the heap, which keeps up to :data:`TRIM_THRESHOLD_BYTES` free at its top for
the next request. The server calls it in each worker (:func:`.runtime.prepare_process`);
glibc's own ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` (or the
``glibc.malloc`` tunables), when set, win.

A large JSON body becomes millions of small Python objects, freed in the middle of the heap
as much as at its top, where no threshold returns them (and so does a ``/metrics`` scrape
of thousands of series): after a request whose body or answer was at least
:data:`RELEASE_AFTER_BYTES` long, :func:`release` asks glibc to return all free
memory (``malloc_trim(0)``). It runs in gunicorn's ``post_request`` hook, after the response
went out. An app that embeds the extension keeps its process as it was unless it calls
these itself (or sets ``PREDICT_MANAGE_PROCESS`` for the thresholds). Elsewhere than glibc
they do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from typing import Any, MutableMapping

logger = logging.getLogger(__name__)

RELEASE_AFTER_BYTES = 4 * 1024 * 1024
"""Bodies (as inflated) or answers at least this long mark their request for
:func:`release`."""
ENVIRON_KEY = "flask_predict.release_memory"
MMAP_THRESHOLD_BYTES = RELEASE_AFTER_BYTES
"""Blocks this large or larger get a mapping of their own, unmapped when freed: a large
request's buffers (bodies, arrays of a million values) never stay in the heap."""
TRIM_THRESHOLD_BYTES = 4 * MMAP_THRESHOLD_BYTES
"""Free memory at the top of the heap up to this much is kept for the next request."""

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""``mallopt`` parameters (glibc's ``malloc.h``)."""
THRESHOLDS = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES, "MALLOC_MMAP_THRESHOLD_",
               "glibc.malloc.mmap_threshold"),
              (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES, "MALLOC_TRIM_THRESHOLD_",
               "glibc.malloc.trim_threshold"))
"""Each threshold: its parameter, its value here, and how an operator sets it for glibc."""


def note_size(environ: MutableMapping[str, Any], size: int) -> None:
    """Mark the request for :func:`release` when its body, or its answer (a scrape of a
    server with thousands of series), was *size* bytes or more."""
    if size >= RELEASE_AFTER_BYTES:
        environ[ENVIRON_KEY] = True


def release(environ: MutableMapping[str, Any] | None = None) -> bool:
    """Return free heap memory to the system if the request of *environ* was large (or
    unconditionally, without *environ*). Whether glibc gave any back."""
    if environ is not None and not environ.pop(ENVIRON_KEY, False):
        return False
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


def fix_thresholds() -> list[str]:
    """Set glibc's mapping and trim thresholds (:data:`THRESHOLDS`) for this process,
    except those the environment sets; the names of those set (none elsewhere than glibc)."""
    libc = _glibc()
    if libc is None:
        return []
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    done = []
    for parameter, value, variable, tunable in THRESHOLDS:
        if variable in os.environ or tunable + "=" in tunables:
            continue
        if libc.mallopt(parameter, value):
            done.append(variable)
    logger.debug("malloc thresholds set: %s", done)
    return done


_libc: list[Any] = []


def _glibc() -> Any:
    """glibc with ``malloc_trim`` and ``mallopt`` typed, or ``None`` where the C library is
    another (musl, macOS)."""
    if not _libc:
        libc = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            libc.malloc_trim.argtypes = [ctypes.c_size_t]
            libc.malloc_trim.restype = ctypes.c_int
            libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            libc.mallopt.restype = ctypes.c_int
        except (OSError, AttributeError):
            logger.debug("not glibc: its heap is left as it is")
            libc = None
        _libc.append(libc)
    return _libc[0]


def resident_bytes() -> int:
    """This process's resident memory now (Linux's ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
