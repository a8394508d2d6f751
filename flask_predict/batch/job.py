"""A batch prediction job: input files in, one output line per instance, in order.

The inputs are pieces, in order: each local JSON lines file cut into byte ranges at line
boundaries (:mod:`.ranges`), and every other input (CSV, Parquet, TFRecord, a file list, a
remote file) read here
a chunk at a time. One process scores the pieces itself. Several are a pool forked after
the model loaded: each worker uses the copy it inherited, the one model copy of the job,
set up for its own process (:meth:`Model.after_fork`). A worker given a byte range reads it
and writes its lines to a part file, which this process appends to the output in input
order by the kernel's copy, so the lines of local JSON lines never pass through this
process; the chunks of the other inputs are read here and their lines sent back. One
process puts a second core to work where that pays: it overlaps a model's predictions with
the parsing, or else writes the output beside the scoring (:mod:`.overlap`). At most
two pieces per worker are in flight, so memory and the parts on disk stay flat whatever the
input's size.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.synchronize import Event
from typing import IO, Any, Iterable, Iterator, Mapping, Union

from ..api import Model
from ..errors import CannotExplain, ConfigError
from .instances import InstanceConfig
from .output import OutputFile
from .overlap import InOrder
from .progress import Progress, Summary
from .ranges import Range, ranges
from .reading import Chunk, block_buffer, chunks, range_chunks
from .records import BINARY_FORMATS, binary_chunks
from .scoring import AS_READ, Scored, score
from .sources import Source

IN_FLIGHT_PER_WORKER = 2
"""Pieces queued per worker: one scoring, one waiting, so no worker idles between them."""

PARENT_CHECK_SECONDS = 0.5
"""How often a pool worker checks that the job's process is still there."""

Piece = Union[Range, Source]
"""A byte range of a local JSON lines file, or a whole input read a chunk at a time."""

_worker: dict[str, Any] = {}
"""In a pool worker only: the model it inherited and the job's settings, set once by
:func:`_start_worker` (a forked worker's whole state; the parent never sets it)."""


def run(model: Model, sources: list[Source], output: str, *, processes: int = 1,
        chunk_size: int = 1000, config: InstanceConfig = AS_READ, explain: bool = False,
        parameters: Mapping[str, Any] | None = None, stream: IO[str] | None = None) -> Summary:
    """Predict every instance of *sources* with *model* into the file *output*.

    :param config: how each record becomes its instance (Vertex AI's ``instanceConfig``:
        an instance type, a key field, fields included or excluded; see :mod:`.instances`).
    :param explain: each output line with its prediction's explanation (Vertex AI's
        ``generateExplanation``), as :meth:`Model.explain_instances` answers it.
    :param processes: scoring processes; above one, *model* should have been loaded with
        ``warm=False`` (each worker warms its copy up) and this process should not have
        predicted with it (a native thread pool started before a fork hangs the child).
    :param parameters: the predict request's other keys, for every chunk.
    :param stream: where progress shows, when it is a terminal.
    :raises ConfigError: an input cannot be read in its format, *config* names fields of
        binary records (TFRecord, a file list), which have none, a remote *output* cannot be
        written, or *explain* and the model does not explain (no output is written).
    :raises ValueError: *output* is in no store a job writes to.
    """
    if config.names_fields and any(source.format in BINARY_FORMATS for source in sources):
        raise ConfigError("a key field and included or excluded fields need records with "
                          "fields (JSON lines, CSV, Parquet), not TFRecord files or file "
                          "lists")
    sizes = [source.size() for source in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    progress = Progress(Summary(output), stream, total)
    request = dict(parameters or {})
    settings = (chunk_size, config, request, explain)
    try:
        with OutputFile(output) as out:
            if processes <= 1:
                buffer = block_buffer()  # the pieces are read one after the other
                every_chunk = (chunk for piece in pieces(sources)
                               for chunk in _chunks(piece, chunk_size, config, buffer))
                scoring = InOrder(model, request, config, explain)
                for scored in scoring.scored(every_chunk):
                    out.write(scored.lines, behind=scoring.core_to_spare)
                    progress.add(scored.predictions, scored.errors, scored.blank,
                                 scored.read_bytes)
            else:
                for scored, part in _pooled(model, pieces(sources), out, processes, settings):
                    if part is None:
                        out.write(scored.lines)
                    else:
                        out.append(part)
                    progress.add(scored.predictions, scored.errors, scored.blank,
                                 scored.read_bytes)
    except CannotExplain as exc:
        raise ConfigError(f"--explain: {exc.message}") from None
    return progress.done()


def pieces(sources: Iterable[Source]) -> Iterator[Piece]:
    """*sources* as the job's pieces, in order: a local JSON lines file as its byte ranges,
    any other input whole."""
    for source in sources:
        if source.format == "jsonl" and source.local:
            yield from ranges(source.path, os.path.getsize(source.path))
        else:
            yield source


def _chunks(piece: Piece, chunk_size: int, config: InstanceConfig,
            buffer: memoryview | None = None) -> Iterator[Chunk]:
    if isinstance(piece, Range):
        return range_chunks(piece, chunk_size, buffer)
    if piece.format in BINARY_FORMATS:
        return binary_chunks(piece, chunk_size)
    return chunks(piece, chunk_size, config.table_type())


_Settings = tuple[int, InstanceConfig, dict[str, Any], bool]
"""The chunk size, how records become instances, the request's other keys and whether each
prediction is explained."""


def _pooled(model: Model, work: Iterable[Piece], out: OutputFile, processes: int,
            settings: _Settings) -> Iterator[tuple[Scored, str | None]]:
    """Each piece scored by the pool, in order: its byte range's part file, or one chunk's
    lines read here."""
    threads = max(1, (os.cpu_count() or 1) // processes)
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_start_worker,
                             initargs=(model, threads, settings, stop)) as pool:
        pending: deque[tuple[Future[Scored], str | None]] = deque()
        try:
            for index, task in enumerate(_tasks(work, settings)):
                if isinstance(task, Range):
                    path = out.part(index)
                    pending.append((pool.submit(_score_range, task, path), path))
                else:
                    pending.append((pool.submit(_score_chunk, task), None))
                if len(pending) >= IN_FLIGHT_PER_WORKER * processes:
                    future, part = pending.popleft()
                    yield future.result(), part
            while pending:
                future, part = pending.popleft()
                yield future.result(), part
        except BaseException:  # failed or interrupted: the running ranges stop too
            stop.set()
            raise
        finally:
            for future, _ in pending:
                future.cancel()


def _tasks(work: Iterable[Piece], settings: _Settings) -> Iterator[Range | Chunk]:
    """The pool's tasks: each byte range whole, each other input a chunk at a time."""
    for piece in work:
        if isinstance(piece, Range):
            yield piece
        else:
            yield from _chunks(piece, settings[0], settings[1])


def _start_worker(model: Model, threads: int, settings: _Settings, stop: Event) -> None:
    """A pool worker's start: its inherited copy of *model* made ready here, and a thread
    that ends the worker once the job's process is gone."""
    threading.Thread(target=_end_with, args=(os.getppid(),), name="flask-predict-job-watch",
                     daemon=True).start()
    model.after_fork(threads)
    _worker.update(model=model, settings=settings, stop=stop, buffer=block_buffer())


def _end_with(parent: int) -> None:
    """End this process once *parent* is gone (killed: it then orphaned this worker, which
    would wait for tasks forever, holding the job's standard streams open)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _score_chunk(chunk: Chunk) -> Scored:
    _, config, parameters, explain = _worker["settings"]
    return score(_worker["model"], chunk, parameters, config, explain)


def _score_range(part: Range, path: str) -> Scored:
    """Score the byte range *part* into the file *path*; the counts, no lines. A job that
    failed or was interrupted stops it between two chunks (the part is then dropped)."""
    chunk_size, config, parameters, explain = _worker["settings"]
    total = Scored(b"", 0, 0, 0, 0)
    with open(path, "wb") as file:
        for chunk in range_chunks(part, chunk_size, _worker["buffer"]):
            if _worker["stop"].is_set():
                break
            scored = score(_worker["model"], chunk, parameters, config, explain)
            file.write(scored.lines)
            total.predictions += scored.predictions
            total.errors += scored.errors
            total.blank += scored.blank
            total.read_bytes += scored.read_bytes
    return total
