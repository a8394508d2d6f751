"""The runner's batch schedulers: one :class:`~.batching.BatchScheduler` per set of
parameters (the server's, and each model's own), behind one door."""

from __future__ import annotations

import threading

import numpy as np

from .batch_arrays import Arrays
from .batching import BatchKey, BatchObserver, BatchScheduler, RunBatch
from ..settings.batching import BatchingParameters


class Batchers:
    """The runner's schedulers: one per set of parameters (the server's, and each model's
    own), made on first use, sharing one run function and observer; closed together."""

    def __init__(self, run: RunBatch, observer: BatchObserver | None = None) -> None:
        self._run = run
        self._observer = observer
        self._lock = threading.Lock()
        self._schedulers: dict[BatchingParameters, BatchScheduler] = {}

    def scheduler(self, parameters: BatchingParameters) -> BatchScheduler:
        with self._lock:
            if parameters not in self._schedulers:
                self._schedulers[parameters] = BatchScheduler(
                    parameters, self._run, self._observer,
                    name=f"batch{len(self._schedulers)}")
            return self._schedulers[parameters]

    def submit(self, parameters: BatchingParameters, key: BatchKey, inputs: Arrays,
               deadline: float | None = None) -> dict[str, np.ndarray]:
        """:meth:`BatchScheduler.submit` on the scheduler of *parameters*."""
        return self.scheduler(parameters).submit(key, inputs, deadline)

    def close(self) -> None:
        """Close every scheduler at once, then wait for each to drain."""
        with self._lock:
            schedulers = list(self._schedulers.values())
        for scheduler in schedulers:
            scheduler.close(wait=False)
        for scheduler in schedulers:
            scheduler.close()
