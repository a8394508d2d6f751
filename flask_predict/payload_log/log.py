"""The payload log of one app: which requests are kept, and the writer threads that send
them to their sinks, off the request path.

A request is sampled when its scope opens (:meth:`PayloadLog.sample`), before its model is
known: at the highest rate of any policy, and then, when it closes, at its model's rate
over that one, so each model's requests are kept at its own rate. Only a sampled request's
bodies are kept (a REST body as the view reads it; a gRPC message as it is); the others
pay one random number. A kept request is put on its sink's bounded queue; when the queue
is full (the sink is slower than the requests) the record is dropped and counted, never
waited for. Each sink's thread renders the records (:mod:`.entry`) and writes them.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import random
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..request.record import INFERENCE_VERBS, RequestRecord
from .entry import Entry
from ..settings.payload_log import PayloadSettings
from .sinks import open_sink

if TYPE_CHECKING:
    from ..request.transport import Transport
    from ..observability.metrics import Metrics

logger = logging.getLogger(__name__)

UNLOGGED_STATUS = frozenset({401, 403})
"""Requests refused for their credentials are not logged: a client without a token cannot
fill the log."""
OUTCOMES = ("written", "dropped", "failed")
"""What became of a kept record: written to its sink, dropped because the sink's queue was
full, or lost because the sink failed."""
BATCH = 64
"""Records a writer takes from its queue at once."""
WARN_SECONDS = 60.0
"""A writer warns of dropped or failed records at most this often."""
_STOP = object()


class PayloadLog:
    """Samples one app's requests and hands the kept ones to their sinks' writers."""

    def __init__(self, settings: PayloadSettings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self.top = settings.top_rate()
        self.limit = settings.max_body_bytes
        self.metrics = metrics
        self.counts = dict.fromkeys(OUTCOMES, 0)
        """Records per outcome in this process (also in the metrics when they are on)."""
        self._lock = threading.Lock()
        self.writers = {sink: Writer(sink, settings, self.count) for sink in settings.sinks()}
        self.random = random.random
        # an embedding app may never close: what is queued is still written at exit
        atexit.register(_at_exit, weakref.WeakMethod(self.shutdown))

    def sample(self, record: RequestRecord, carrier: Any, transport: Transport) -> None:
        """A request opens: keep its body when it is sampled."""
        if record.verb in INFERENCE_VERBS and self.random() < self.top:
            record.kept = (transport, transport.keep_request(carrier, self.limit))

    def keep(self, record: RequestRecord, status: int, response: Any, ended: float) -> None:
        """A request closes with *response* (its body or message): log it if it was sampled
        and its model's rate keeps it."""
        if record.kept is None:
            return
        transport, request = record.kept
        record.kept = None
        policy = self.settings.policy(record.model)
        if policy is None or status in UNLOGGED_STATUS or (policy.sampling < self.top and
                              self.random() * self.top >= policy.sampling):
            return
        started = time.time() - (time.perf_counter() - record.started)
        entry = Entry(record, status, ended - record.started, started,
                      request if policy.mode != "response" else None,
                      transport.keep_response(response) if policy.mode != "request" else None)
        self.writers[policy.sink].put(entry)

    def count(self, outcome: str, number: int = 1) -> None:
        with self._lock:
            self.counts[outcome] += number
        if self.metrics is not None:
            self.metrics.payload_records(outcome, number)

    def shutdown(self, grace: float = 5.0) -> None:
        """Write what is queued (for at most *grace* seconds), then close the sinks."""
        for writer in self.writers.values():
            writer.stop(grace)


def _at_exit(shutdown: weakref.WeakMethod[Any]) -> None:
    method = shutdown()
    if method is not None:
        method()


class Writer:
    """One sink's queue and the thread that empties it (started in the process that
    first puts a record, so a fork leaves none behind)."""

    def __init__(self, sink: str, settings: PayloadSettings, count: Any) -> None:
        self.name = sink
        self.settings = settings
        self.count = count
        self.queue: queue.Queue[Any] = queue.Queue(settings.queue)
        self.thread: threading.Thread | None = None
        self.pid = 0
        self.warned = 0.0
        self._lock = threading.Lock()

    def put(self, entry: Entry) -> None:
        """Queue *entry*, or drop and count it when the queue is full."""
        if self.pid != os.getpid():
            self._start()
        try:
            self.queue.put_nowait(entry)
        except queue.Full:
            self.count("dropped")
            self._warn("its queue is full")

    def _start(self) -> None:
        with self._lock:
            if self.pid == os.getpid():
                return
            self.queue = queue.Queue(self.settings.queue)  # a forked copy's is not ours
            sink = open_sink(self.name, self.settings)
            self.thread = threading.Thread(target=self._run, args=(self.queue, sink),
                                           name="flask-predict-payload-log", daemon=True)
            self.thread.start()
            self.pid = os.getpid()

    def _run(self, entries: queue.Queue[Any], sink: Any) -> None:
        limit = self.settings.max_body_bytes
        stop = False
        while not stop:
            batch = [entries.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(entries.get_nowait())
                except queue.Empty:
                    break
            stop = any(entry is _STOP for entry in batch)
            kept = [entry for entry in batch if entry is not _STOP]
            if not kept:
                continue
            try:
                sink.write([entry.render(limit) for entry in kept])
            except Exception as exc:
                self.count("failed", len(kept))
                self._warn(f"it failed ({type(exc).__name__}: {exc})")
            else:
                self.count("written", len(kept))
        sink.close()

    def _warn(self, why: str) -> None:
        now = time.monotonic()
        if now - self.warned >= WARN_SECONDS:
            self.warned = now
            logger.warning("flask_predict: payload records to %s dropped: %s",
                           self.name.partition("?")[0], why)

    def stop(self, grace: float) -> None:
        thread = self.thread
        if thread is None or self.pid != os.getpid():
            return
        try:
            self.queue.put(_STOP, timeout=grace)
        except queue.Full:
            return
        thread.join(grace)
