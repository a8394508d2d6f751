"""A batch prediction job: input files in, one output line per instance, in order.

Chunks are read here and scored here (one process) or by a pool of processes forked after
the model loaded (several): each worker uses the copy it inherited, the one model copy of
the job, set up for its own process (:meth:`Model.after_fork`). At most two chunks per
worker are in flight, so memory stays flat whatever the input's size.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from typing import IO, Any, Iterable, Iterator, Mapping

from ..api import Model
from ..errors import ConfigError
from .output import OutputFile
from .instances import InstanceConfig
from .progress import Progress, Summary
from .reading import Chunk, chunks
from .records import BINARY_FORMATS, binary_chunks
from .scoring import AS_READ, Scored, score
from .sources import Source

IN_FLIGHT_PER_WORKER = 2
"""Chunks queued per worker: one scoring, one waiting, so no worker idles between chunks."""

_worker: dict[str, Any] = {}
"""In a pool worker only: the model it inherited, the request's parameters and the instance
config, set once by
:func:`_start_worker` (a forked worker's whole state; the parent never sets it)."""


def run(model: Model, sources: list[Source], output: str, *, processes: int = 1,
        chunk_size: int = 1000, config: InstanceConfig = AS_READ,
        parameters: Mapping[str, Any] | None = None, stream: IO[str] | None = None) -> Summary:
    """Predict every instance of *sources* with *model* into the file *output*.

    :param config: how each record becomes its instance (Vertex AI's ``instanceConfig``:
        an instance type, a key field, fields included or excluded; see :mod:`.instances`).
    :param processes: scoring processes; above one, *model* should have been loaded with
        ``warm=False`` (each worker warms its copy up) and this process should not have
        predicted with it (a native thread pool started before a fork hangs the child).
    :param parameters: the predict request's other keys, for every chunk.
    :param stream: where progress shows, when it is a terminal.
    :raises ConfigError: an input cannot be read in its format, *config* names fields of
        binary records (TFRecord, a file list), which have none, or a remote *output*
        cannot be written.
    :raises ValueError: *output* is in no store a job writes to.
    """
    if config.names_fields and any(source.format in BINARY_FORMATS for source in sources):
        raise ConfigError("a key field and included or excluded fields need records with "
                          "fields (JSON lines, CSV, Parquet), not TFRecord files or file "
                          "lists")
    sizes = [source.size() for source in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    progress = Progress(Summary(output), stream, total)
    read = (chunk for source in sources
            for chunk in (binary_chunks(source, chunk_size) if source.format in BINARY_FORMATS
                          else chunks(source, chunk_size, config.table_type())))
    with OutputFile(output) as out:
        for scored in _scored(model, read, processes, dict(parameters or {}), config):
            out.write(scored.lines)
            progress.add(scored.predictions, scored.errors, scored.blank, scored.read_bytes)
    return progress.done()


def _scored(model: Model, read: Iterable[Chunk], processes: int,
            parameters: dict[str, Any], config: InstanceConfig) -> Iterator[Scored]:
    if processes <= 1:
        for chunk in read:
            yield score(model, chunk, parameters, config)
        return
    threads = max(1, (os.cpu_count() or 1) // processes)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_start_worker,
                             initargs=(model, threads, parameters, config)) as pool:
        pending: deque[Future[Scored]] = deque()
        try:
            for chunk in read:
                pending.append(pool.submit(_score_in_worker, chunk))
                if len(pending) >= IN_FLIGHT_PER_WORKER * processes:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _start_worker(model: Model, threads: int, parameters: dict[str, Any],
                  config: InstanceConfig) -> None:
    """A pool worker's start: its inherited copy of *model* made ready here."""
    model.after_fork(threads)
    _worker.update(model=model, parameters=parameters, config=config)


def _score_in_worker(chunk: Chunk) -> Scored:
    return score(_worker["model"], chunk, _worker["parameters"], _worker["config"])
