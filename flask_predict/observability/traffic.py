"""What the metrics say about traffic: request totals per model, and rates over time.

:class:`Snapshot` reads the request series of a registry (see :mod:`flask_predict.observability.metrics`)
into totals; :class:`Samples` keeps a minute of snapshots so pages can show rates.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Collection, Iterable

from prometheus_client.metrics_core import Metric


@dataclass
class Totals:
    """Inference requests (verbs that run a model) of one model, or of all."""

    requests: int = 0
    failed: int = 0
    seconds: float = 0.0
    """The sum of their durations."""
    buckets: dict[float, int] = field(default_factory=dict)
    """Upper bound (s) -> requests that took at most that long (cumulative)."""

    def add(self, other: Totals) -> None:
        self.requests += other.requests
        self.failed += other.failed
        self.seconds += other.seconds
        for bound, count in other.buckets.items():
            self.buckets[bound] = self.buckets.get(bound, 0) + count

    def minus(self, earlier: Totals) -> Totals:
        """What was added since *earlier* (counters only grow)."""
        return Totals(self.requests - earlier.requests, self.failed - earlier.failed,
                      self.seconds - earlier.seconds,
                      {bound: count - earlier.buckets.get(bound, 0)
                       for bound, count in self.buckets.items()})

    def percentile(self, percent: float) -> float:
        """Upper bound (s) of the bucket holding the *percent* percentile (0 when empty;
        the largest finite bound for the slowest bucket)."""
        wanted = self.requests * percent / 100.0
        finite = [bound for bound in sorted(self.buckets) if bound != math.inf]
        for bound in finite:
            if self.requests and self.buckets[bound] >= wanted:
                return bound
        return finite[-1] if finite and self.requests else 0.0


@dataclass
class Snapshot:
    """What the registry held at one moment."""

    time: float
    models: dict[str, Totals]
    """Per resolved model name; "" holds requests that failed before a model was found."""
    workers: int

    @property
    def total(self) -> Totals:
        total = Totals()
        for totals in self.models.values():
            total.add(totals)
        return total

    @classmethod
    def of(cls, families: Iterable[Metric], verbs: Collection[str]) -> Snapshot:
        """Read the request series of *families*, counting requests of *verbs* only."""
        models: dict[str, Totals] = {}
        workers = 0
        for family in families:
            if family.name == "flask_predict_workers":
                workers = int(sum(sample.value for sample in family.samples))
            if family.name not in ("flask_predict_requests", "flask_predict_request_duration_"
                                   "seconds"):
                continue
            for name, labels, value, *_ in family.samples:
                if labels.get("verb") not in verbs:
                    continue
                totals = models.setdefault(labels["model"], Totals())
                if name == "flask_predict_requests_total":
                    if int(labels["code"]) >= 400:
                        totals.failed += int(value)
                elif name.endswith("_count"):
                    totals.requests += int(value)
                elif name.endswith("_sum"):
                    totals.seconds += value
                elif name.endswith("_bucket"):
                    bound = float(labels["le"])
                    totals.buckets[bound] = totals.buckets.get(bound, 0) + int(value)
        return cls(time.time(), models, workers)


class Samples:
    """Snapshots a page took over the last minute, for rates (requests/s and the like).

    Counters only grow: a rate is the difference of two snapshots over the time between
    them. Each worker keeps the snapshots its own page requests took.
    """

    def __init__(self, keep_seconds: float = 60.0) -> None:
        self.keep_seconds = keep_seconds
        self._samples: deque[tuple[float, Totals]] = deque()

    def add(self, snapshot: Snapshot) -> None:
        now = snapshot.time
        if self._samples and now - self._samples[-1][0] < 0.5:
            self._samples.pop()  # at most about two a second
        self._samples.append((now, snapshot.total))
        while self._samples and now - self._samples[0][0] > self.keep_seconds:
            self._samples.popleft()

    def intervals(self, seconds: float | None = None) -> list[tuple[float, Totals, Totals]]:
        """``(length s, earlier, later)`` for consecutive snapshots of the last *seconds*."""
        samples = list(self._samples)
        if seconds is not None and samples:
            samples = [s for s in samples if samples[-1][0] - s[0] <= seconds]
        return [(b[0] - a[0], a[1], b[1]) for a, b in zip(samples, samples[1:])]

    def rate(self, seconds: float = 10.0) -> float:
        """Requests per second over the last *seconds* (0 before two snapshots)."""
        spans = self.intervals(seconds)
        if not spans:
            return 0.0
        length = sum(span[0] for span in spans)
        return (spans[-1][2].requests - spans[0][1].requests) / length if length else 0.0
