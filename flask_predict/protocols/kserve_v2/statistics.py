"""Triton's statistics extension, read from the server's Prometheus series. No Flask here:
``GET /v2/models[/<m>[/versions/<v>]]/stats`` and the gRPC ``ModelStatistics`` both answer
:func:`statistics`.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_statistics.md

Every number is summed over every worker of the server (and every protocol): it comes from
the multiprocess registry of :mod:`flask_predict.metrics`, counting the requests that ran a
model (verbs ``predict``, ``classify``, ``regress``). The mapping:

* ``success`` / ``fail``: requests answered with a status under 400 / 400 and up, and the
  time from routing to their answer (``flask_predict_requests_total`` by ``code``; the
  duration histogram's sum, less ``flask_predict_failed_request_seconds_total`` for fail);
* ``compute_input``: decoding, from routing to the predictor call
  (``request_preprocess_seconds``); ``compute_infer``: time in the predictor
  (``request_predict_seconds``); ``compute_output``: encoding, from the predictor's return
  to the answer (``request_postprocess_seconds``);
* ``queue``: one per successful request, 0 ns: a sync worker takes a request only when it
  is free, so nothing waits in a queue of ours (the listen queue is the kernel's);
* ``inference_count``: successful requests (not rows); ``execution_count``: predictor
  runs; ``last_inference``: ms since the epoch of the last inference answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ...errors import ModelNotFound, Unimplemented
from ...metrics import INFERENCE_VERBS

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from ...served import ServedModel
    from ...service import ModelService
    from ...metrics import Metrics

PHASES = {"request_preprocess_seconds": "compute_input",
          "request_predict_seconds": "compute_infer",
          "request_postprocess_seconds": "compute_output"}
"""The phase histograms (labels ``model_name``, ``model_version``) -> Triton's field."""


@dataclass
class Duration:
    count: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, int]:
        return {"count": self.count, "ns": max(0, round(self.seconds * 1e9))}


@dataclass
class VersionStats:
    """What the series say about one model version."""

    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    phases: dict[str, Duration] = field(
        default_factory=lambda: {name: Duration() for name in PHASES.values()})
    seconds: float = 0.0
    """The summed durations of every inference request (success and fail)."""
    last: float = 0.0
    """Unix time of the last inference answered."""

    def as_dict(self, name: str, version: str) -> dict[str, Any]:
        """Triton's ``$model_stat``."""
        success = Duration(self.success.count, self.seconds - self.fail.seconds)
        inference = {"success": success.as_dict(), "fail": self.fail.as_dict(),
                     "queue": {"count": success.count, "ns": 0},
                     **{phase: d.as_dict() for phase, d in self.phases.items()}}
        return {"name": name, "version": version, "last_inference": round(self.last * 1000),
                "inference_count": success.count,
                "execution_count": self.phases["compute_infer"].count,
                "inference_stats": inference, "batch_stats": [], "memory_usage": []}


def read(families: Iterable[Metric]) -> dict[tuple[str, str], VersionStats]:
    """The statistics of each (model, version) the series name."""
    found: dict[tuple[str, str], VersionStats] = {}

    def of(model: str, version: str) -> VersionStats:
        stats = found.get((model, version))
        if stats is None:
            stats = found[(model, version)] = VersionStats()
        return stats

    for family in families:
        name = family.name
        for sample in family.samples:
            labels, suffix = sample.labels, sample.name[len(name):]
            if name in PHASES:
                phase = of(labels["model_name"], labels["model_version"]).phases[PHASES[name]]
                if suffix == "_count":
                    phase.count += int(sample.value)
                elif suffix == "_sum":
                    phase.seconds += sample.value
                continue
            if name == "flask_predict_last_inference_timestamp_seconds":
                stats = of(labels["model"], labels["version"])
                stats.last = max(stats.last, sample.value)
                continue
            if not labels.get("model") or labels.get("verb") not in INFERENCE_VERBS:
                continue
            if name == "flask_predict_requests" and suffix == "_total":
                stats = of(labels["model"], labels["version"])
                outcome = stats.fail if int(labels["code"]) >= 400 else stats.success
                outcome.count += int(sample.value)
            elif name == "flask_predict_request_duration_seconds" and suffix == "_sum":
                of(labels["model"], labels["version"]).seconds += sample.value
            elif name == "flask_predict_failed_request_seconds" and suffix == "_total":
                of(labels["model"], labels["version"]).fail.seconds += sample.value
    return found


def statistics(service: ModelService, metrics: Metrics | None, model: str | None = None,
               version: str | None = None) -> dict[str, Any]:
    """``{"model_stats": [...]}`` for every version this worker serves, of every model or
    of *model* (404 when it is not served), or of that one *version* (404 when it is not
    loaded)."""
    if metrics is None:
        raise Unimplemented("statistics are off: PREDICT_METRICS is false")
    served: list[ServedModel] = [service.model(model)] if model else service.models()
    wanted: list[tuple[str, str]] = []
    for entry in served:
        versions = [str(v) for v in sorted(entry.versions)]
        if version:
            if version not in versions:
                raise ModelNotFound(f"requested model '{entry.name}' version {version} is "
                                    "not available")
            versions = [version]
        wanted.extend((entry.name, v) for v in versions)
    found = read(metrics.families())
    return {"model_stats": [found.get(key, VersionStats()).as_dict(*key) for key in wanted]}
