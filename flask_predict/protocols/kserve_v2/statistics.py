"""Triton's statistics extension: the service's per-version statistics
(:mod:`flask_predict.observability.statistics`) in Triton's words. No Flask here:
``GET /v2/models[/<m>[/versions/<v>]]/stats`` and the gRPC ``ModelStatistics`` both answer
:func:`model_stats`.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_statistics.md

The mapping:

* ``success`` / ``fail``: requests answered with a status under 400 / 400 and up, and the
  time from routing to their answer;
* ``compute_input``: decoding (the ``decode`` phase); ``compute_infer``: time in the
  predictor (``predict``); ``compute_output``: encoding (``encode``);
* ``queue``: one per successful request, 0 ns: a sync worker takes a request only when it
  is free, so nothing waits in a queue of ours (the listen queue is the kernel's);
* ``inference_count``: successful requests (not rows); ``execution_count``: predictor
  runs; ``last_inference``: ms since the epoch of the last inference answered.
"""

from __future__ import annotations

from typing import Any

from ...observability.statistics import Duration, VersionStats

PHASES = {"decode": "compute_input", "predict": "compute_infer", "encode": "compute_output"}
"""The service's phase -> Triton's field."""


def _duration(duration: Duration) -> dict[str, int]:
    return {"count": duration.count, "ns": max(0, round(duration.seconds * 1e9))}


def model_stat(name: str, version: str, stats: VersionStats) -> dict[str, Any]:
    """Triton's ``$model_stat`` of one version."""
    success = Duration(stats.success.count, stats.success_seconds)
    inference = {"success": _duration(success), "fail": _duration(stats.fail),
                 "queue": {"count": success.count, "ns": 0},
                 **{PHASES[phase]: _duration(d) for phase, d in stats.phases.items()}}
    return {"name": name, "version": version, "last_inference": round(stats.last * 1000),
            "inference_count": success.count,
            "execution_count": stats.phases["predict"].count,
            "inference_stats": inference, "batch_stats": [], "memory_usage": []}


def model_stats(found: list[tuple[str, str, VersionStats]]) -> dict[str, Any]:
    """``{"model_stats": [...]}`` of what the service found."""
    return {"model_stats": [model_stat(*entry) for entry in found]}
