"""Batching across callers, as TF Serving's ``SharedBatchScheduler`` and ``BatchingSession``
do it: each caller thread submits one request's arrays and blocks until its own rows of
the outputs come back.

Requests join a batch only when their :class:`BatchKey` (model, version, signature,
requested outputs, parameters) is equal, and their inputs have the same names, dtypes
and, unless ``pad_variable_length_inputs``, the same dimensions past the first: so one
caller never receives another's rows or outputs, nor fails because of another's shapes.
Each such group has its own queue of batches (the last one open); ``num_batch_threads``
threads take ready batches round-robin across the queues. A batch is ready when it holds
``max_batch_size`` rows (the cap counts rows, not requests), when ``batch_timeout_micros``
has passed since its first request, or when the scheduler closes.

Where TF Serving answers so, the words are its own: a request larger than a batch is
refused (``Task size N is larger than maximum batch size M``) unless
``enable_large_batch_splitting`` splits it across batches; a full queue is
:class:`QueueFull` (UNAVAILABLE) at once; a batch is padded up to the next of
``allowed_batch_sizes`` with copies of its first row, removed from the outputs; an output
without a row dimension, or with a row count other than the batch's, fails every caller
of the batch. A request's deadline holds while it waits: it is taken out of its batch and
answered DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from ..errors import DeadlineExceeded, InvalidInput, Unavailable
from .batch_arrays import Arrays, merge_inputs, split_outputs, task_rows
from ..settings.batching import BatchingParameters

EXPIRED = "the request's deadline passed while it waited for a batch"


@dataclass(frozen=True)
class BatchKey:
    """What must be equal for two requests to share a batch."""

    model: str
    version: int
    signature: str
    outputs: tuple[str, ...] = ()
    """The outputs asked for, sorted (empty: all of the signature's)."""
    parameters: str = ""
    """The request's parameters as canonical JSON (empty: none)."""

    @classmethod
    def of(cls, model: str, version: int, signature: str, outputs: Sequence[str] = (),
           parameters: Mapping[str, Any] | None = None) -> BatchKey:
        return cls(model, int(version), signature, tuple(sorted(outputs)),
                   json.dumps(parameters, sort_keys=True, default=str) if parameters else "")


RunBatch = Callable[[BatchKey, dict[str, np.ndarray]], Mapping[str, Any]]
"""Runs one batch: the key and the merged inputs in, the outputs (a row each) out."""


class QueueFull(Unavailable):
    """``max_enqueued_batches`` batches are waiting: the request is refused at once."""

    def __init__(self) -> None:
        super().__init__("The batch scheduling queue to which this task was submitted is full")


class SchedulerClosed(Unavailable):
    """The scheduler is draining for shutdown and takes no new request."""

    def __init__(self) -> None:
        super().__init__("the batch scheduler is shutting down and takes no new request")


class BatchObserver(Protocol):
    """What a scheduler tells as it works (:class:`~.batch_stats.BatchStats` counts it)."""

    def queued(self, key: BatchKey, rows: int) -> None:
        """A request joined the queue of *key*."""

    def refused(self, key: BatchKey, reason: str) -> None:
        """A request was answered without running: ``full``, ``deadline`` or ``closed``."""

    def executed(self, key: BatchKey, rows: int, padded_rows: int,
                 waits: Sequence[float]) -> None:
        """A batch of *rows* rows (*padded_rows* with padding) started, after each of its
        requests waited *waits* seconds in the queue."""


class _Task:
    """One request's rows (or a piece of a split request) in a batch."""

    __slots__ = ("inputs", "rows", "deadline", "queued_at", "done", "outputs", "error",
                 "batch")

    def __init__(self, inputs: Arrays, rows: int, deadline: float | None) -> None:
        self.inputs = inputs
        self.rows = rows
        self.deadline = deadline
        self.queued_at = time.monotonic()
        self.done = threading.Lock()
        """Held until the task is answered (a lock: cheaper to wait on than an event)."""
        self.done.acquire()
        self.outputs: dict[str, np.ndarray] = {}
        self.error: BaseException | None = None
        self.batch: _Batch | None = None
        """The batch it waits in; ``None`` once taken to run (or out of the queue)."""

    def finish(self, outputs: dict[str, np.ndarray] | None = None,
               error: BaseException | None = None) -> None:
        self.outputs, self.error = outputs or {}, error
        self.done.release()

    def wait(self, seconds: float | None) -> bool:
        """Whether the task was answered within *seconds* (``None``: however long)."""
        return self.done.acquire(timeout=-1 if seconds is None else seconds)


class _Batch:
    __slots__ = ("tasks", "rows", "opened")

    def __init__(self) -> None:
        self.tasks: list[_Task] = []
        self.rows = 0
        self.opened = 0.0

    def add(self, task: _Task) -> None:
        if not self.tasks:
            self.opened = time.monotonic()
        self.tasks.append(task)
        self.rows += task.rows
        task.batch = self

    def remove(self, task: _Task) -> None:
        self.tasks.remove(task)
        self.rows -= task.rows
        task.batch = None


class _Queue:
    __slots__ = ("key", "batches")

    def __init__(self, key: BatchKey) -> None:
        self.key = key
        self.batches: deque[_Batch] = deque([_Batch()])
        """Waiting batches; the last is open, the others closed."""


GroupKey = tuple[BatchKey, tuple[tuple[str, str, Any], ...]]


class BatchScheduler:
    """Batches of one set of parameters, at most ``num_batch_threads`` at once.

    Its own threads run the batches that time out or wait for a free thread. A caller whose
    request makes its batch ready (full, or no timeout) while fewer than
    ``num_batch_threads`` batches run runs that batch itself, in its own thread: the same
    batches, without two thread switches per request.
    """

    def __init__(self, parameters: BatchingParameters, run: RunBatch,
                 observer: BatchObserver | None = None, name: str = "batch") -> None:
        self.parameters = parameters
        self._run = run
        self._observer = observer
        self._cond = threading.Condition()
        self._queues: dict[GroupKey, _Queue] = {}
        self._turn = 0
        self._closing = False
        self._free = parameters.num_batch_threads
        """Batches that may start now (``num_batch_threads`` less those running)."""
        self._threads = [threading.Thread(target=self._serve, name=f"{name}-{number}",
                                          daemon=True)
                         for number in range(parameters.num_batch_threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, key: BatchKey, inputs: Arrays,
               deadline: float | None = None) -> dict[str, np.ndarray]:
        """Run *inputs* (each with a leading row dimension) in a batch of *key*; block until
        their outputs come back. *deadline* is a ``time.monotonic()`` instant."""
        rows = task_rows(inputs)
        if deadline is not None and deadline <= time.monotonic():
            self._refuse(key, "deadline")
            raise DeadlineExceeded(EXPIRED)
        limit = self.parameters.max_batch_size
        if rows > limit:
            raise InvalidInput(f"Task size {rows} is larger than maximum batch size {limit}")
        pieces, mine = self._enqueue(key, inputs, rows, deadline)
        if self._observer:
            self._observer.queued(key, rows)
        if mine is not None:
            self._execute(key, mine)
        for piece in pieces:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not piece.wait(left):
                self._withdraw(pieces)
                self._refuse(key, "deadline")
                raise DeadlineExceeded(EXPIRED)
            if piece.error is not None:
                self._withdraw(pieces)
                raise piece.error
        if len(pieces) == 1:
            return pieces[0].outputs
        return {name: np.concatenate([piece.outputs[name] for piece in pieces])
                for name in pieces[0].outputs}

    def close(self, wait: bool = True) -> None:
        """Take no new request; the queued batches run at once (no timeout), then the threads
        exit. *wait*: return when they have, and every running batch has answered (those
        callers run included)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()
            with self._cond:
                while self._free < self.parameters.num_batch_threads:
                    self._cond.wait()

    def queued_requests(self) -> int:
        """Requests (or pieces of split ones) waiting for a batch thread."""
        with self._cond:
            return sum(len(batch.tasks) for queue in self._queues.values()
                       for batch in queue.batches)

    def _enqueue(self, key: BatchKey, inputs: Arrays, rows: int,
                 deadline: float | None) -> tuple[list[_Task], list[_Task] | None]:
        """The request's pieces, queued; and the tasks of its batch when the caller is to run
        it (its batch is ready at the front of its queue, and a batch may start)."""
        group = (key, self._shape_key(inputs))
        cap = self.parameters.batch_rows
        with self._cond:
            if self._closing:
                self._refuse(key, "closed")
                raise SchedulerClosed()
            queue = self._queues.get(group) or _Queue(key)
            room = cap - queue.batches[-1].rows
            if rows <= room:
                sizes = [rows]
            elif self.parameters.enable_large_batch_splitting:
                rest = rows - room
                sizes = ([room] if room else []) + [min(cap, rest - start)
                                                    for start in range(0, rest, cap)]
            else:
                sizes = [rows]
            new_batches = len(sizes) - (1 if sizes[0] <= room else 0)
            if new_batches and len(queue.batches) + new_batches > (
                    self.parameters.max_enqueued_batches):
                self._refuse(key, "full")
                raise QueueFull()
            self._queues[group] = queue
            pieces, start = [], 0
            for size in sizes:
                if queue.batches[-1].rows + size > cap:
                    queue.batches.append(_Batch())
                piece = _Task({name: array[start:start + size] for name, array in
                               inputs.items()} if len(sizes) > 1 else inputs, size, deadline)
                queue.batches[-1].add(piece)
                pieces.append(piece)
                start += size
            batch = pieces[0].batch
            if self._free and len(pieces) == 1 and batch is queue.batches[0]:
                front = self._pop_ready(queue, time.monotonic(), self._timeout)
                if front is not None:
                    self._free -= 1
                    return pieces, self._live(queue, front, time.monotonic())
            self._cond.notify()
        return pieces, None

    def _refuse(self, key: BatchKey, reason: str) -> None:
        if self._observer:
            self._observer.refused(key, reason)

    def _shape_key(self, inputs: Arrays) -> tuple[tuple[str, str, Any], ...]:
        """Inputs that may share a batch: the same names and dtypes, and the same dimensions
        past the first (the same rank, when variable lengths are padded)."""
        pad = self.parameters.pad_variable_length_inputs
        return tuple((name, inputs[name].dtype.str,
                      inputs[name].ndim if pad else inputs[name].shape[1:])
                     for name in sorted(inputs))

    def _withdraw(self, pieces: list[_Task]) -> None:
        """Take a caller's pieces out of the batches they still wait in."""
        with self._cond:
            for piece in pieces:
                if piece.batch is not None:
                    piece.batch.remove(piece)

    def _serve(self) -> None:
        while True:
            with self._cond:
                while True:
                    taken = self._take() if self._free else None
                    if taken is not None:
                        break
                    if self._closing and not self._queues:
                        self._cond.notify_all()
                        return
                    self._cond.wait(self._next_timeout() if self._free else None)
                self._free -= 1
                if self._queues:
                    self._cond.notify()  # another thread may find more to run
            self._execute(*taken)

    def _take(self) -> tuple[BatchKey, list[_Task]] | None:
        """A ready batch, round-robin across the queues; its expired requests answered."""
        now = time.monotonic()
        groups = list(self._queues)
        for step in range(len(groups)):
            group = groups[(self._turn + step) % len(groups)]
            queue = self._queues[group]
            while (front := self._pop_ready(queue, now, self._timeout)) is not None:
                tasks = self._live(queue, front, now)
                if tasks:
                    self._turn = (self._turn + step + 1) % len(groups)
                    return queue.key, tasks
            if not queue.batches[0].tasks:  # only an empty open batch left
                del self._queues[group]
        return None

    @property
    def _timeout(self) -> float:
        return self.parameters.batch_timeout_micros / 1e6

    def _live(self, queue: _Queue, batch: _Batch, now: float) -> list[_Task]:
        """A batch taken to run: its tasks out of the queue, those expired answered so."""
        tasks = []
        for task in batch.tasks:
            task.batch = None
            if task.deadline is not None and task.deadline <= now:
                task.finish(error=DeadlineExceeded(EXPIRED))
                self._refuse(queue.key, "deadline")
            else:
                tasks.append(task)
        return tasks

    def _pop_ready(self, queue: _Queue, now: float, timeout: float) -> _Batch | None:
        """The queue's front batch if it is closed, or open and full, timed out or closing."""
        front = queue.batches[0]
        if len(queue.batches) == 1:
            if not front.tasks or not (self._closing or front.rows >= (
                    self.parameters.batch_rows) or now >= front.opened + timeout):
                return None
            queue.batches.append(_Batch())
        return queue.batches.popleft()

    def _next_timeout(self) -> float | None:
        """Seconds until the first open batch times out; ``None``: nothing is waiting."""
        opened = [queue.batches[-1].opened for queue in self._queues.values()
                  if len(queue.batches) == 1 and queue.batches[0].tasks]
        if not opened:
            return None
        due = min(opened) + self._timeout
        return max(0.0, due - time.monotonic())

    def _execute(self, key: BatchKey, tasks: list[_Task]) -> None:
        """Run one batch (its thread holds one of the batches that may run); every caller
        gets its rows, or the batch's error (never a hang)."""
        try:
            self._answer(key, tasks)
        finally:
            with self._cond:
                self._free += 1
                if self._queues or self._closing:  # else no thread has anything to do
                    self._cond.notify()

    def _answer(self, key: BatchKey, tasks: list[_Task]) -> None:
        if not tasks:
            return
        try:
            rows = sum(task.rows for task in tasks)
            inputs, padded = merge_inputs([task.inputs for task in tasks], rows,
                                          self.parameters)
            if self._observer:
                started = time.monotonic()
                self._observer.executed(key, rows, padded,
                                        [started - task.queued_at for task in tasks])
            outputs = self._run(key, inputs)
            parts = split_outputs(outputs, [task.rows for task in tasks], padded)
        except BaseException as error:  # even SystemExit: the thread lives, callers answered
            for task in tasks:
                task.finish(error=error)
            return
        for task, part in zip(tasks, parts):
            task.finish(outputs=part)

