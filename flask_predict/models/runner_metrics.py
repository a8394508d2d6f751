"""The runners' series (:mod:`flask_predict.runner`), read when ``/metrics`` is scraped: each
runner's up state and restarts (from the master's board) and the executions per model and
version (asked of each runner): Triton's ``nv_inference_exec_count``, one per predictor run,
so requests over executions is the mean batch once calls are batched; with batching, the
batch sizes in rows, the time requests waited for their batch and the refusals."""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, Metric)

from .runner_client import RunnerClient, read_board, runner_sockets


class RunnerCollector:
    """A prometheus_client collector over this server's runners."""

    def __init__(self) -> None:
        self.clients = [RunnerClient(path) for path in runner_sockets()]

    def describe(self) -> list[Metric]:
        return []  # nothing asked of the runners when the registry is built

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("flask_predict_runner_up", "1 while the runner process runs "
                               "(one per machine, or one per GPU)", labels=("runner", "gpu"))
        restarts = CounterMetricFamily("flask_predict_runner_restarts", "Times the master "
                                       "started a runner again after it exited",
                                       labels=("runner", "gpu"))
        for runner in read_board():
            labels = (str(runner.get("index")), "" if runner.get("gpu") is None
                      else str(runner["gpu"]))
            up.add_metric(labels, 1.0 if runner.get("up") else 0.0)
            restarts.add_metric(labels, float(runner.get("restarts", 0)))
        executions = CounterMetricFamily(
            "flask_predict_model_executions", "Predictor runs in the runners, by model and "
            "version (Triton's nv_inference_exec_count: one per batch)", labels=("model",
                                                                                 "version"))
        totals: dict[tuple[str, str], float] = {}
        batches: list[dict[str, Any]] = []
        for client in self.clients:
            entries, batching = _stats(client)
            for entry in entries:
                for model, version, count in entry.get("executions", ()):
                    if model:
                        key = (str(model), str(version))
                        totals[key] = totals.get(key, 0.0) + float(count)
            if batching:
                batches.append(batching)
        for key, total in sorted(totals.items()):
            executions.add_metric(key, total)
        yield up
        yield restarts
        yield executions
        if batches:
            yield from _batch_series(batches)


def _batch_series(reports: list[dict[str, Any]]) -> Iterator[Metric]:
    """The batching counts of every runner, summed."""
    for name, field, what in (
            ("flask_predict_batch_size_rows", "batch_rows", "Rows in each batch the runners "
             "ran (padding not counted)"),
            ("flask_predict_batch_queue_seconds", "queue_seconds", "Time each request waited "
             "in the runner before its batch started")):
        buckets: dict[str, float] = {}
        total = 0.0
        for report in reports:
            for le, count in report[field]["buckets"]:
                buckets[str(le)] = buckets.get(str(le), 0.0) + float(count)
            total += float(report[field]["sum"])
        family = HistogramMetricFamily(name, what)
        family.add_metric((), [(le if le == "+Inf" else str(float(le)), count)
                               for le, count in buckets.items()], total)
        yield family
    refused = CounterMetricFamily("flask_predict_batch_refused", "Requests the runners "
                                  "answered without running: a full queue, a deadline "
                                  "passed while waiting, a shutdown", labels=("reason",))
    reasons: dict[str, float] = {}
    for report in reports:
        for reason, count in report.get("refused", {}).items():
            reasons[reason] = reasons.get(reason, 0.0) + float(count)
    for reason, count in sorted(reasons.items()):
        refused.add_metric((reason,), count)
    yield refused


def _stats(client: RunnerClient) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    try:
        reply, _ = client.request({"op": "stats"}, timeout=2.0)
    except Exception:
        return [], None  # a runner that is down counts nothing now; its up state says so
    found = reply.get("stats")
    return (found if isinstance(found, list) else []), reply.get("batching")
