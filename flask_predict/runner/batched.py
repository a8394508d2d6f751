"""The runner's batching (docs/batching.md): which versions batch and with which parameters,
their schedulers (:class:`~.batchers.Batchers`: one per set of parameters), and the counts
the workers' metrics read.

A version batches when the server's rule says so (``PREDICT_BATCHING``, the per-model
``batching_params.pbtxt``, a model entry's ``batching``), decided when it loads from the
settings the runner read at start (its model is the configured one whose ``base_path`` holds
the version folder). Requests join a batch only with the same model, version, signature,
requested outputs and loaded version (:class:`~.batching.BatchKey`; the version's handle is
part of its parameters), so one caller never receives another's rows.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import ModelNotReady
from ..types import ModelSpec, Tensor
from .batch_stats import BatchStats
from .batchers import Batchers
from .batching import BatchKey
from ..settings.batching import BatchingParameters, BatchingSettings


class Batching:
    """The schedulers of one runner."""

    def __init__(self, settings: BatchingSettings, specs: Sequence[ModelSpec],
                 find: Callable[[str], Any]) -> None:
        self.settings = settings
        self.specs = list(specs)
        self._find = find
        """The loaded version of a handle (the runner's entries), for a batch to run on."""
        self.stats = BatchStats()
        self.batchers = Batchers(self._run, self.stats)

    def parameters_for(self, path: str) -> BatchingParameters | None:
        """What the version folder *path* batches with (``None``: each call runs alone).

        :raises ConfigError: its ``batching_params.pbtxt`` does not parse: the version does
            not load, as in TF Serving."""
        folder = os.path.dirname(os.path.abspath(path))
        spec = next((s for s in self.specs if os.path.abspath(s.base_path) == folder), None)
        return self.settings.for_version(spec.batching if spec else None, path)

    def submit(self, parameters: BatchingParameters, handle: str, model: str, version: int,
               signature: str | None, outputs: Sequence[str] | None,
               inputs: Mapping[str, np.ndarray], deadline: float | None) -> dict[str, Tensor]:
        """Run *inputs* in a batch of the version *handle*; the caller's own rows back."""
        key = BatchKey.of(model, version, signature or "", outputs or (),
                          {"handle": handle, "outputs": None if outputs is None
                           else list(outputs)})
        return self.batchers.submit(parameters, key, inputs, deadline)

    def _run(self, key: BatchKey, inputs: dict[str, np.ndarray]) -> Mapping[str, Any]:
        detail = json.loads(key.parameters)
        entry = self._find(detail["handle"])
        if entry is None:
            raise ModelNotReady(f"model {key.model!r} version {key.version} was unloaded")
        entry.counted(key.model, str(key.version))
        outputs: Mapping[str, Any] = entry.run(inputs, detail["outputs"], key.signature or None)
        return outputs

    def close(self) -> None:
        """TERM: no new request; the queued batches run now, then the threads end."""
        self.batchers.close()

    def report(self) -> dict[str, Any]:
        """The counts as JSON: histograms as ``[[le, cumulative count], ...]`` and sums."""
        snapshot = self.stats.snapshot()
        return {"batch_rows": _histogram(snapshot.batch_rows),
                "queue_seconds": _histogram(snapshot.queue_seconds),
                "padding_rows": snapshot.padding_rows, "refused": dict(snapshot.refused)}


def _histogram(histogram: Any) -> dict[str, Any]:
    return {"buckets": [["+Inf" if le == float("inf") else le, count]
                        for le, count in histogram.cumulative()],
            "sum": histogram.total}
