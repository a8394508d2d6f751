"""Reading the metrics: totals, percentiles from histogram buckets, rates from snapshots."""

from __future__ import annotations

import math

from flask_predict.observability.traffic import Samples, Snapshot, Totals


def totals(requests: int, failed: int, seconds: float, buckets: dict[float, int]) -> Totals:
    return Totals(requests, failed, seconds, buckets)


def test_percentiles_are_bucket_upper_bounds() -> None:
    got = totals(10, 1, 0.05, {0.001: 5, 0.01: 9, 0.1: 10, math.inf: 10})
    assert got.percentile(50) == 0.001
    assert got.percentile(90) == 0.01
    assert got.percentile(100) == 0.1
    assert Totals().percentile(99) == 0.0
    slow = totals(2, 0, 40.0, {0.1: 0, 10.0: 0, math.inf: 2})
    assert slow.percentile(100) == 10.0  # past the last bound: the largest finite one


def test_differences_and_rates() -> None:
    samples = Samples()
    first = totals(10, 0, 1.0, {0.01: 10, math.inf: 10})
    later = totals(40, 3, 2.5, {0.01: 30, math.inf: 40})
    samples.add(Snapshot(100.0, {"iris": first}, 2))
    assert samples.rate() == 0.0 and samples.intervals() == []
    samples.add(Snapshot(102.0, {"iris": later}, 2))
    assert samples.rate() == 15.0
    (seconds, earlier, now), = samples.intervals()
    delta = now.minus(earlier)
    assert (seconds, delta.requests, delta.failed) == (2.0, 30, 3)
    assert delta.buckets == {0.01: 20, math.inf: 30} and delta.percentile(50) == 0.01
    samples.add(Snapshot(102.2, {"iris": later}, 2))  # closer than half a second: replaces
    assert len(samples.intervals()) == 1
    samples.add(Snapshot(200.0, {"iris": later}, 2))  # a minute later: the old ones go
    assert samples.intervals() == [] and samples.rate() == 0.0
