"""The files prometheus_client's multiprocess mode keeps one set of per process (every
worker's values, summed by a scrape): the variable naming their folder, the master's
clearing of it at start and of a worker's live gauges when it exits."""

from __future__ import annotations

import os

from prometheus_client import multiprocess, values

MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def use_multiprocess_values() -> None:
    """Make sure values go to the multiprocess files.

    prometheus_client picks its value class when it is first imported: a process that
    imported it before ``PROMETHEUS_MULTIPROC_DIR`` was set would keep every worker's
    values private. This redoes that choice now that the variable is set.
    """
    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()


def prepare_directory(directory: str) -> None:
    """Create *directory* or empty it of a previous server's files (the master, at start)."""
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.unlink(os.path.join(directory, name))


def worker_exited(pid: int) -> None:
    """Drop the live gauges of a worker that exited (gunicorn's ``child_exit``, master)."""
    directory = os.environ.get(MULTIPROC_VARIABLE)
    if directory:
        multiprocess.mark_process_dead(pid, directory)
