"""A scrape of the shared multiprocess files made in a short-lived child process.

Merging every worker's files builds millions of small objects for a server with thousands
of series (1,000 models: some 400,000 samples over 4 workers); freed again, they leave the
heap of the worker that answered fragmented, 100-200 MiB of it that no trim gives back
(docs/many-models.md). Under gunicorn the worker forks a child that reads the files and
writes the text to a pipe, and exits: its garbage goes with it. A child that fails, or does
not answer within :data:`CHILD_SECONDS`, is replaced by the scrape made here.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import time
import warnings

from prometheus_client import CollectorRegistry, generate_latest

logger = logging.getLogger(__name__)

CHILD_SECONDS = 60.0
"""How long the worker waits for its scrape child before scraping itself."""


def exposition_in_child(registry: CollectorRegistry) -> bytes:
    """``generate_latest(registry)``, made in a forked child (where ``fork`` exists)."""
    if not hasattr(os, "fork"):
        return generate_latest(registry)
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():  # Python 3.12's word on forking with threads running:
            warnings.simplefilter("ignore", DeprecationWarning)  # the child runs none of theirs
            pid = os.fork()
    except OSError as exc:  # no process or memory to spare: scrape here
        os.close(read_end)
        os.close(write_end)
        logger.warning("flask_predict: no child process for the scrape (%s); scraping in the "
                       "worker", exc)
        return generate_latest(registry)
    if pid == 0:  # the child: no logging, no lock another thread may hold, no exit hooks
        code = 1
        try:
            os.close(read_end)
            view = memoryview(generate_latest(registry))
            while view:
                view = view[os.write(write_end, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    body = _read_all(read_end, time.monotonic() + CHILD_SECONDS)
    if body is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if body is None or status != 0:
        logger.warning("flask_predict: the scrape's child process failed (status %d); "
                       "scraping in the worker", status)
        return generate_latest(registry)
    return body


def _read_all(fd: int, deadline: float) -> bytes | None:
    """Everything until the end of pipe *fd* (then closed), or ``None`` past *deadline*."""
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector, os.fdopen(fd, "rb", buffering=0) as pipe:
        selector.register(pipe, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = pipe.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
