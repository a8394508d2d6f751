"""What the batch schedulers did, counted for the runner to report: batch sizes in rows (a
histogram), the time each request waited before its batch started (a histogram),
executions per key (Triton's ``nv_inference_exec_count``), and requests answered without
running (a full queue, a deadline, a shutdown).

:class:`BatchStats` is a :class:`~.batching.BatchObserver`: hand one to every scheduler of
a runner, and read :meth:`BatchStats.snapshot` where the runner reports (cumulative
counts, as Prometheus counters and histograms take them).
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from .batching import BatchKey

ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, math.inf)
"""Upper bounds of the batch size histogram, in rows (the padding not counted)."""
WAIT_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                2.5, 5.0, math.inf)
"""Upper bounds of the queue wait histogram, in seconds."""


@dataclass
class Histogram:
    """Cumulative counts per upper bound (Prometheus's ``le``), and their sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = self.counts or [0] * len(self.bounds)

    def observe(self, value: float) -> None:
        self.counts[min(bisect_left(self.bounds, value), len(self.bounds) - 1)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[float, int]]:
        """``(le, count of values at most le)`` for each bound."""
        running, out = 0, []
        for bound, count in zip(self.bounds, self.counts):
            running += count
            out.append((bound, running))
        return out

    def copy(self) -> Histogram:
        return Histogram(self.bounds, list(self.counts), self.total)


@dataclass
class BatchSnapshot:
    """The counts at one moment (copies: safe to read while batches run)."""

    batch_rows: Histogram
    queue_seconds: Histogram
    executions: Counter[BatchKey]
    """Batches run, per key."""
    rows: Counter[BatchKey]
    """Rows run, per key (padding not counted)."""
    padding_rows: int
    refused: Counter[str]
    """Requests answered without running, per reason (``full``, ``deadline``, ``closed``)."""


def per_version(counts: Counter[BatchKey]) -> Counter[tuple[str, int]]:
    """Counts per key summed per (model, version), the labels a metric reports them by."""
    summed: Counter[tuple[str, int]] = Counter()
    for key, count in counts.items():
        summed[key.model, key.version] += count
    return summed


class BatchStats:
    """Thread-safe counts of every scheduler it observes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batch_rows = Histogram(ROW_BUCKETS)
        self._queue_seconds = Histogram(WAIT_BUCKETS)
        self._executions: Counter[BatchKey] = Counter()
        self._rows: Counter[BatchKey] = Counter()
        self._padding = 0
        self._refused: Counter[str] = Counter()

    def queued(self, key: BatchKey, rows: int) -> None:
        pass

    def refused(self, key: BatchKey, reason: str) -> None:
        with self._lock:
            self._refused[reason] += 1

    def executed(self, key: BatchKey, rows: int, padded_rows: int,
                 waits: Sequence[float]) -> None:
        with self._lock:
            self._batch_rows.observe(rows)
            for wait in waits:
                self._queue_seconds.observe(wait)
            self._executions[key] += 1
            self._rows[key] += rows
            self._padding += padded_rows - rows

    def snapshot(self) -> BatchSnapshot:
        with self._lock:
            return BatchSnapshot(self._batch_rows.copy(), self._queue_seconds.copy(),
                                 Counter(self._executions), Counter(self._rows),
                                 self._padding, Counter(self._refused))
