"""The lazy tier's series (docs/many-models.md): made on the first event, so a server
without a lazy tier shows none of them. Each worker's models and bytes are its own
(``liveall``: one sample per worker); loads, evictions, hits and misses are summed."""

from __future__ import annotations

from typing import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class LazyMetrics:
    """The series the tier's events (:data:`flask_predict.models.lazy.Events`) count."""

    def __init__(self, registry: CollectorRegistry | None, buckets: Sequence[float]) -> None:
        self.models = Gauge("flask_predict_lazy_models", "Models the lazy tier holds, per "
                            "worker", registry=registry, multiprocess_mode="liveall")
        self.bytes = Gauge("flask_predict_lazy_bytes", "Resident bytes the lazy tier's models "
                           "hold, per worker (each load's measured growth)",
                           registry=registry, multiprocess_mode="liveall")
        self.load_seconds = Histogram(
            "flask_predict_lazy_load_seconds", "Time to load a model of the lazy tier on "
            "demand (and warm it up)", buckets=buckets, registry=registry)
        self.evictions = Counter("flask_predict_lazy_evictions", "Models evicted from the "
                                 "lazy tier (least recently used, under the cap)",
                                 registry=registry)
        self.hits = Counter("flask_predict_lazy_hits", "Requests for a lazy model the "
                            "worker held", registry=registry)
        self.misses = Counter("flask_predict_lazy_misses", "Requests for a lazy model the "
                              "worker had to load (or wait for)", registry=registry)

    def event(self, event: str, value: float) -> None:
        if event == "hit":
            self.hits.inc()
        elif event == "miss":
            self.misses.inc()
        elif event == "load":
            self.load_seconds.observe(value)
        elif event == "evicted":
            self.evictions.inc()
        elif event == "bytes":
            self.bytes.set(value)
        elif event == "models":
            self.models.set(value)
