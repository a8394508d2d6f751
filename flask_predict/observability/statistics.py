"""Per-version request statistics, read from the server's Prometheus series: what the
service answers for V2's statistics extension (and any front end that asks). No Flask here.

Every number is summed over every worker of the server (and every protocol): it comes from
the multiprocess registry of :mod:`flask_predict.observability.metrics`, counting the requests that ran a
model (verbs ``predict``, ``classify``, ``regress``, ``explain``):

* ``success`` / ``fail``: requests answered with a status under 400 / 400 and up, and the
  time from routing to their answer (``flask_predict_requests_total`` by ``code``; the
  duration histogram's sum, less ``flask_predict_failed_request_seconds_total`` for fail);
* the phases: ``decode``, from routing to the predictor call (``request_preprocess_seconds``);
  ``predict``, time in the predictor (``request_predict_seconds``, and
  ``request_explain_seconds`` for the verb ``explain``); ``encode``, from the
  predictor's return to the answer (``request_postprocess_seconds``);
* ``last``: the Unix time of the last inference answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ..request.record import INFERENCE_VERBS

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

PHASES = {"request_preprocess_seconds": "decode",
          "request_predict_seconds": "predict",
          "request_explain_seconds": "predict",  # the explain verb's time in the predictor
          "request_postprocess_seconds": "encode"}
"""The phase histograms (labels ``model_name``, ``model_version``) -> the phase."""


@dataclass
class Duration:
    count: int = 0
    seconds: float = 0.0


@dataclass
class VersionStats:
    """What the series say about one model version."""

    success: Duration = field(default_factory=Duration)
    """Successful requests; their time is :attr:`seconds` less the failures'."""
    fail: Duration = field(default_factory=Duration)
    phases: dict[str, Duration] = field(
        default_factory=lambda: {name: Duration() for name in PHASES.values()})
    seconds: float = 0.0
    """The summed durations of every inference request (success and fail)."""
    last: float = 0.0
    """Unix time of the last inference answered."""

    @property
    def success_seconds(self) -> float:
        return self.seconds - self.fail.seconds


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
