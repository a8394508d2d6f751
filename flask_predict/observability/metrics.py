"""The Prometheus series of one app: every front end reports here, every page reads here.

Under gunicorn, ``gunicorn.conf.py`` sets ``PROMETHEUS_MULTIPROC_DIR`` (and clears it when
the server starts): prometheus_client's multiprocess mode then keeps each worker's values in
memory-mapped files in that folder (:mod:`.metrics_files`), and a scrape answered by any
worker sums every worker's, those of exited workers included. Without that variable (an app
embedded in one process) the values live in this app's own registry.

Names follow the peers where they have a convention (KServe's ``request_*_seconds`` phase
histograms); see docs/observability.md for the mapping to Triton's and KServe's series.
"""

from __future__ import annotations

import math
import os
import threading
import time
from bisect import bisect_left
from itertools import count
from typing import Any
from weakref import WeakSet

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge,
                               Histogram, generate_latest, multiprocess)
from prometheus_client.metrics_core import Metric

from ..request.record import INFERENCE_VERBS, RequestRecord
from .metrics_files import MULTIPROC_VARIABLE, use_multiprocess_values
from .scrape import exposition_in_child
from .traffic import Snapshot

INF = math.inf
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, INF)
"""Upper bounds of the latency histograms, in seconds: one-row requests take well under 1 ms."""
SIZE_BUCKETS = (256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
                INF)
QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, INF)
"""Upper bounds of the queue-wait histogram: an idle server's wait is under a millisecond."""
LOAD_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, INF)
FLUSH_SECONDS = 1.0
"""How often each worker writes the requests it counted to the shared registry."""

REQUEST_LABELS = ("protocol", "model", "version", "verb")
PHASE_LABELS = ("model_name", "model_version", "protocol")  # KServe's model_name, and ours


class _Series:
    """The labelled children of one (protocol, model, version, verb), made once."""

    __slots__ = ("codes", "histograms", "failed")

    def __init__(self, metrics: Metrics, key: tuple[str, str, str, str]) -> None:
        self.codes: dict[int, Counter] = {}
        self.failed = metrics.failed_seconds.labels(*key)
        phase = (key[1], key[2], key[0])
        self.histograms = (metrics.duration.labels(*key), metrics.request_size.labels(*key),
                           metrics.response_size.labels(*key),
                           metrics.preprocess.labels(*phase),
                           (metrics.explain if key[3] == "explain" else metrics.predict
                            ).labels(*phase),
                           metrics.postprocess.labels(*phase))
        for child in self.histograms:
            if not (hasattr(child, "_sum") and hasattr(child, "_buckets")):
                raise RuntimeError("this prometheus_client keeps histograms differently; "
                                   "flask_predict.observability.metrics needs updating")


_BOUNDS = (LATENCY_BUCKETS, SIZE_BUCKETS, SIZE_BUCKETS, LATENCY_BUCKETS, LATENCY_BUCKETS,
           LATENCY_BUCKETS)
"""The buckets of each histogram of a :class:`_Series`, in its order."""


class _Pending:
    """What one series counted since the last flush: plain numbers, no file write."""

    __slots__ = ("codes", "histograms", "failed_seconds", "last")

    def __init__(self) -> None:
        self.codes: dict[int, int] = {}
        self.histograms = [[0.0] * (len(bounds) + 1) for bounds in _BOUNDS]
        """Per histogram: the sum of the values, then the count in each bucket."""
        self.failed_seconds = 0.0
        """The durations of the failed requests (status 400 and up)."""
        self.last = 0.0
        """When the last request ended (unix time)."""


def _observe(histogram: list[float], bounds: tuple[float, ...], value: float) -> None:
    """Count *value* in a histogram kept as ``[sum, count per bucket ...]``; one within the
    first bound (most of a small request's) needs no search."""
    histogram[0] += value
    histogram[1 if value <= bounds[0] else bisect_left(bounds, value) + 1] += 1


class Metrics:
    """The series one app records into, and the registry that exposes them.

    A request is counted in memory (a few additions under a lock); a thread writes the
    counts to the registry once a second (:data:`FLUSH_SECONDS`), and so does every read of
    this process's registry: writing each request's dozen values to the memory-mapped files
    as it ends would cost more than the rest of a one-row request's bookkeeping together. So other workers' pages may miss up to a
    second of this worker's requests, the in-flight gauge is up to a second old, and a
    worker killed with SIGKILL loses at most its last second of counts.
    """

    def __init__(self) -> None:
        self.directory = os.environ.get(MULTIPROC_VARIABLE) or None
        registry: CollectorRegistry | None
        if self.directory:
            use_multiprocess_values()
            registry = None  # values go to the files; the collector reads them back
            self.registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(self.registry, self.directory)
        else:
            registry = self.registry = CollectorRegistry()
        self.requests = Counter(
            "flask_predict_requests", "Requests answered, by protocol, model, version, "
            "verb and HTTP status code", (*REQUEST_LABELS, "code"), registry=registry)
        self.duration = Histogram(
            "flask_predict_request_duration_seconds", "Time from routing to the answer",
            REQUEST_LABELS, buckets=LATENCY_BUCKETS, registry=registry)
        self.preprocess = Histogram(
            "request_preprocess_seconds", "Decoding: from routing to the predictor call",
            PHASE_LABELS, buckets=LATENCY_BUCKETS, registry=registry)
        self.predict = Histogram(
            "request_predict_seconds", "Time in the predictor", PHASE_LABELS,
            buckets=LATENCY_BUCKETS, registry=registry)
        self.explain = Histogram(
            "request_explain_seconds", "Time in the predictor, explaining (the verb "
            "explain)", PHASE_LABELS, buckets=LATENCY_BUCKETS, registry=registry)
        self.postprocess = Histogram(
            "request_postprocess_seconds", "Encoding: from the predictor's return to the "
            "answer", PHASE_LABELS, buckets=LATENCY_BUCKETS, registry=registry)
        self.request_size = Histogram(
            "flask_predict_request_size_bytes", "Request body sizes", REQUEST_LABELS,
            buckets=SIZE_BUCKETS, registry=registry)
        self.response_size = Histogram(
            "flask_predict_response_size_bytes", "Response body sizes (streams not counted)",
            REQUEST_LABELS, buckets=SIZE_BUCKETS, registry=registry)
        self.failed_seconds = Counter(
            "flask_predict_failed_request_seconds", "Time from routing to the answer of "
            "the requests that failed (status 400 and up): the rest of the duration "
            "histogram's sum is the successful ones' (Triton's success/fail statistics)",
            REQUEST_LABELS, registry=registry)
        self.last_inference = Gauge(
            "flask_predict_last_inference_timestamp_seconds", "When a model version last "
            "answered an inference request (unix time)", ("model", "version"),
            registry=registry, multiprocess_mode="max")
        self.in_flight = Gauge(
            "flask_predict_requests_in_flight", "Requests being answered",
            registry=registry, multiprocess_mode="livesum")
        self.queue = Histogram(
            "flask_predict_request_queue_seconds", "Time a request waited between the front "
            "end taking it (its X-Request-Start header) and a worker starting it",
            buckets=QUEUE_BUCKETS, registry=registry)
        self.busy = Counter(
            "flask_predict_worker_busy_seconds", "Time the workers spent answering requests "
            "(its rate over the worker count is the busy share)", registry=registry)
        self.load_seconds = Histogram(
            "flask_predict_model_load_seconds", "Time to load (and warm up) a model version",
            ("model", "version"), buckets=LOAD_BUCKETS, registry=registry)
        self.load_failures = Counter(
            "flask_predict_model_load_failures", "Model versions that failed to load",
            ("model", "version"), registry=registry)
        self.versions_loaded = Gauge(
            "flask_predict_model_versions_loaded", "1 for each version a worker serves",
            ("model", "version"), registry=registry, multiprocess_mode="liveall")
        self.workers = Gauge(
            "flask_predict_workers", "Worker processes serving", registry=registry,
            multiprocess_mode="livesum")
        self.workers.set(1)
        self.payload = Counter(
            "flask_predict_payload_records", "Payload log records, by outcome: written to "
            "their sink, dropped (the sink's queue was full) or failed (the sink failed)",
            ("outcome",), registry=registry)
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        self._made_in = registry
        self._lazy: Any = None
        self._after_fork()
        _INSTANCES.add(self)

    def _after_fork(self) -> None:
        """A fresh start in a new process: no inherited counts or lock."""
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        """Held while counts are written to the registry's series, or series dropped."""
        self._pending: dict[tuple[str, str, str, str], _Pending] = {}
        self._starts = count()
        """Counts requests as they start, without a lock (``next`` on it is one C call)."""
        self._reads = 0
        """How many times :meth:`flush` read ``_starts`` (each read counts one too)."""
        self._finished = 0
        """Requests answered in this process."""
        self._active_written = 0
        self._queued = [0.0] * (len(QUEUE_BUCKETS) + 1)
        """The queue waits counted since the last flush: their sum, then each bucket's count."""
        self._busy = 0.0
        """The time spent answering requests since the last flush."""

    # --- recording (every request) -----------------------------------------------------------

    def started(self) -> None:
        next(self._starts)  # the in-flight gauge is written by flush()

    def queued(self, seconds: float) -> None:
        """Count the time a request waited before this worker took it."""
        with self._lock:
            _observe(self._queued, QUEUE_BUCKETS, seconds)

    def finished(self, record: RequestRecord, status: int, response_bytes: int | None,
                 ended: float) -> None:
        """Count one answered request: its status, sizes and the time of each phase."""
        key = (record.protocol, record.model, record.version, record.verb)
        duration = ended - record.started
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = _Pending()
            codes = pending.codes
            codes[status] = codes.get(status, 0) + 1
            if status >= 400:
                pending.failed_seconds += duration
            pending.last = time.time()
            self._finished += 1
            self._busy += duration
            latency, request_size, response_size, before, predict, after = pending.histograms
            _observe(latency, LATENCY_BUCKETS, duration)
            _observe(request_size, SIZE_BUCKETS, record.request_bytes)
            if response_bytes is not None:
                _observe(response_size, SIZE_BUCKETS, response_bytes)
            if record.predict_started:
                _observe(before, LATENCY_BUCKETS, record.predict_started - record.started)
                _observe(predict, LATENCY_BUCKETS, record.predict_seconds)
                _observe(after, LATENCY_BUCKETS, ended - record.predict_ended)
        if not _FLUSHER.running:
            _FLUSHER.start()

    def flush(self) -> None:
        """Write the counts kept in memory to the registry."""
        with self._writing:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            started = next(self._starts) - self._reads
            self._reads += 1
            active = started - self._finished
            queued, self._queued = self._queued, [0.0] * (len(QUEUE_BUCKETS) + 1)
            busy, self._busy = self._busy, 0.0
        if active != self._active_written:
            self.in_flight.set(active)
            self._active_written = active
        _add_to_histogram(self.queue, queued)
        if busy:
            self.busy.inc(busy)
        for key, counted in pending.items():
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series(self, key)
            for status, number in counted.codes.items():
                counter = series.codes.get(status)
                if counter is None:
                    counter = series.codes[status] = self.requests.labels(*key, str(status))
                counter.inc(number)
            for child, histogram in zip(series.histograms, counted.histograms):
                _add_to_histogram(child, histogram)
            if counted.failed_seconds:
                series.failed.inc(counted.failed_seconds)
            if key[1] and key[3] in INFERENCE_VERBS:
                self.last_inference.labels(key[1], key[2]).set(counted.last)

    def close(self) -> None:
        """Write what is left, and stop being flushed (the app is closing)."""
        _INSTANCES.discard(self)
        self.flush()

    def payload_records(self, outcome: str, number: int) -> None:
        """Count *number* payload log records that were written, dropped or failed."""
        self.payload.labels(outcome).inc(number)

    def model_event(self, event: str, model: str, version: int, seconds: float) -> None:
        """The repository's listener: loads, failures, unloads and evictions of versions."""
        labels = (model, str(version))
        if event == "loaded":
            self.load_seconds.labels(*labels).observe(seconds)
            self.versions_loaded.labels(*labels).set(1)
        elif event == "failed":
            self.load_seconds.labels(*labels).observe(seconds)
            self.load_failures.labels(*labels).inc()
        elif event == "unloaded":
            self.versions_loaded.labels(*labels).set(0)
        elif event == "evicted":
            self.forget(*labels)

    def forget(self, model: str, version: str) -> None:
        """Drop the series of a version evicted from the lazy tier, in one process, as Triton
        drops an unloaded model's. Not under gunicorn: prometheus_client's multiprocess mode
        keeps every value it made, removed or not, and the counts go on in the files."""
        if self.directory:
            return
        with self._writing:
            self._flush()
            for key in [key for key in list(self._series) if key[1:3] == (model, version)]:
                for status in self._series.pop(key).codes:
                    _remove(self.requests, *key, str(status))
                for family in (self.duration, self.request_size, self.response_size,
                               self.failed_seconds):
                    _remove(family, *key)
                for phase in (self.preprocess, self.predict, self.explain, self.postprocess):
                    _remove(phase, model, version, key[0])
            for kept in (self.last_inference, self.load_seconds, self.load_failures,
                         self.versions_loaded):
                _remove(kept, model, version)

    def lazy_event(self, event: str, value: float) -> None:
        """The lazy tier's events (:mod:`.lazy_metrics`; its series made on the first)."""
        if self._lazy is None:
            from .lazy_metrics import LazyMetrics

            self._lazy = LazyMetrics(self._made_in, LOAD_BUCKETS)
        self._lazy.event(event, value)

    # --- reading -----------------------------------------------------------------------------

    def exposition(self) -> tuple[bytes, str]:
        """The Prometheus text format of every series, and its content type."""
        self.flush()
        scrape = exposition_in_child if self.directory else generate_latest  # .scrape's why
        return scrape(self.registry), CONTENT_TYPE_LATEST

    def families(self) -> list[Metric]:
        """Every series now, summed over every worker (what the statistics read)."""
        self.flush()
        return list(self.registry.collect())

    def snapshot(self) -> Snapshot:
        """Inference totals per model, summed over every worker (pages read this)."""
        self.flush()
        return Snapshot.of(self.registry.collect(), INFERENCE_VERBS)


def _remove(family: Any, *labels: str) -> None:
    """Drop *family*'s child of *labels* where it has one."""
    try:
        family.remove(*labels)
    except KeyError:
        pass


def _add_to_histogram(child: Histogram, histogram: list[float]) -> None:
    """Add counted observations to a histogram child: its sum, then each bucket's count.

    prometheus_client offers no public call that adds many observations at once; its
    children keep one value per bucket (``_buckets``, non-cumulative) and the sum
    (``_sum``), which is what this adds to (checked when a series is made).
    """
    if not any(histogram[1:]):
        return
    child._sum.inc(histogram[0])
    for bucket, number in zip(child._buckets, histogram[1:]):
        if number:
            bucket.inc(number)


_INSTANCES: WeakSet[Metrics] = WeakSet()


class _Flusher:
    """One thread per process that flushes every app's metrics each second."""

    def __init__(self) -> None:
        self.running = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if not self.running:
                threading.Thread(target=self._run, name="flask-predict-metrics",
                                 daemon=True).start()
                self.running = True

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            for metrics in list(_INSTANCES):
                metrics.flush()

    def after_fork(self) -> None:
        """The thread does not survive a fork: the child starts its own when needed."""
        self.running = False
        self._lock = threading.Lock()
        for metrics in list(_INSTANCES):
            metrics._after_fork()


_FLUSHER = _Flusher()
os.register_at_fork(after_in_child=_FLUSHER.after_fork)
