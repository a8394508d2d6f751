"""Issue 51's benchmark: TensorFlow in the runner against TensorFlow in every worker.

A SavedModel MLP of a realistic size (20 -> 512 -> 512 -> 1, ReLU, float32) is served by
``gunicorn -c gunicorn.conf.py wsgi:app`` in two modes, in the same run:

* ``in_worker``: ``FLASK_PREDICT_RUNNER=false``, each worker loads TensorFlow and the model
  (the mode before the runner);
* ``runner``: the default, one runner process holds TensorFlow for every worker; and
  ``runner+batching`` (``FLASK_PREDICT_BATCHING=true``, a parameters file tuned as
  docs/batching.md advises for sync workers: ``max_batch_size`` 4, the workers' count, so
  that a burst's batch is full and runs at once; ``batch_timeout_micros`` 1000).

Measured: the total PSS of every process of the server (master, workers, runner; from
``/proc/<pid>/smaps_rollup``) with 1, 4 and 8 workers, once each worker has answered; with 4
workers, every mode's server started at once: one-row latency at one connection (median
of sequential requests, the modes taking turns request by request), one-row
throughput at 16 connections (``wrk``) with the server's CPU time per request meanwhile,
and 10,000-row requests (median latency). Ratios
are against ``in_worker`` in the same run (the machines are noisy).

    .venv/bin/python benchmarks/runner.py [--workers 1 4 8] [--modes in_worker runner
        runner+batching] [--seconds 5] [--no-wrk] [--hidden 7000] [--traffic-workers 4]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

ROOT = HERE.parent
WIDTH = 20
HIDDEN = 512
PATH = "/v1/models/mlp:predict"


def export_mlp(base: Path, hidden: int = HIDDEN) -> None:
    """``base/1``: the MLP as a TF2 SavedModel, exported in a child process (this one never
    imports TensorFlow)."""
    code = f"""
import numpy as np, tensorflow as tf
rng = np.random.default_rng(7)
class MLP(tf.Module):
    def __init__(self):
        self.w1 = tf.Variable(rng.normal(size=({WIDTH}, {hidden})).astype(np.float32) * 0.1)
        self.w2 = tf.Variable(rng.normal(size=({hidden}, {hidden})).astype(np.float32) * 0.05)
        self.w3 = tf.Variable(rng.normal(size=({hidden}, 1)).astype(np.float32) * 0.05)
    @tf.function(input_signature=[tf.TensorSpec([None, {WIDTH}], tf.float32, name="x")])
    def serve(self, x):
        h = tf.nn.relu(x @ self.w1)
        h = tf.nn.relu(h @ self.w2)
        return {{"y": h @ self.w3}}
m = MLP()
tf.saved_model.save(m, {str(base / "1")!r}, signatures={{"serving_default": m.serve}})
"""
    harness.export_in_child(code)


def body(rows: int) -> bytes:
    values = np.random.default_rng(rows).normal(size=(rows, WIDTH)).round(4).tolist()
    return json.dumps({"instances": values}).encode()


def server(name: str, model: Path, workers: int, env: dict[str, str]) -> harness.Server:
    return harness.Server(
        name=name, command=[sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                            "--bind", "127.0.0.1:{port}", "wsgi:app"],
        path=PATH, cwd=ROOT, ready_path="/v2/health/ready", ready_status=200,
        env={"WEB_CONCURRENCY": str(workers), "LOG_LEVEL": "WARNING",
             "FLASK_PREDICT_ACCESS_LOG": "false",
             "FLASK_PREDICT_MODELS": json.dumps({"mlp": {"base_path": str(model)}}), **env})


def total_pss(running: harness.Running) -> float:
    pss = 0.0
    for proc, _ in running._group_stats():
        try:
            pss += harness.smaps_mib(int(proc.name))[0]
        except (OSError, KeyError):
            continue
    return pss


def every_worker_answers(running: harness.Running, workers: int) -> None:
    one = body(1)
    with ThreadPoolExecutor(max(2, workers)) as pool:
        answers = list(pool.map(lambda _: harness.post(running.port, PATH, one),
                                range(workers * 8)))
    assert all(status == 200 for status, _ in answers), answers[:2]


def latencies_ms(servers: dict[str, harness.Running], data: bytes, count: int
                 ) -> dict[str, float]:
    """The median latency of *count* sequential requests to each server, the servers taking
    turns request by request: on a shared machine each mode meets the same load (one mode
    measured after another met a different machine each time)."""
    times: dict[str, list[float]] = {mode: [] for mode in servers}
    for _ in range(count):
        for mode, running in servers.items():
            started = time.perf_counter()
            status, _ = harness.post(running.port, PATH, data)
            times[mode].append((time.perf_counter() - started) * 1000)
            assert status == 200
    return {mode: statistics.median(found) for mode, found in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 4, 8],
                        help="worker counts for the memory rows (none: skip them)")
    parser.add_argument("--modes", nargs="*", default=["in_worker", "runner", "runner+batching"],
                        help="the modes of the traffic rows, at 4 workers (none: skip them)")
    parser.add_argument("--hidden", type=int, default=HIDDEN,
                        help="the hidden layers' width (7000: about 200 MB of weights)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--traffic-workers", type=int, default=4,
                        help="the workers of the traffic rows, and the batches' cap")
    parser.add_argument("--no-wrk", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="runner-bench-"))
    export_mlp(folder / "mlp", args.hidden)
    params = folder / "batching.txt"
    # docs/batching.md's advice for sync workers: the largest batch a burst can form is the
    # workers' count (that of the traffic rows); a larger cap never fills and waits the timeout
    params.write_text(f"max_batch_size {{ value: {args.traffic_workers} }}\n"
                      "batch_timeout_micros { value: 1000 }\n"
                      "max_enqueued_batches { value: 2 }\nnum_batch_threads { value: 2 }\n")
    modes = {"in_worker": {"FLASK_PREDICT_RUNNER": "false"}, "runner": {},
             "runner+batching": {"FLASK_PREDICT_BATCHING": "true",
                                 "FLASK_PREDICT_BATCHING_PARAMETERS_FILE": str(params)}}
    report: dict[str, Any] = {"pss_mib": {}, "latency_1row_ms": {}, "latency_10000rows_ms": {},
                              "rps_16": {}, "cpu_ms_16": {}}
    for workers in args.workers:
        for mode in ("in_worker", "runner"):
            with harness.started(server(mode, folder / "mlp", workers, modes[mode]),
                                 timeout=600, log_dir=folder) as running:
                every_worker_answers(running, workers)
                report["pss_mib"][f"{mode} x{workers}"] = total_pss(running)
                print(f"{mode:<16} {workers} workers: total PSS "
                      f"{report['pss_mib'][f'{mode} x{workers}']:8.1f} MiB", flush=True)
    wrk_body = folder / "one.json"
    wrk_body.write_bytes(body(1))
    with contextlib.ExitStack() as stack:  # every mode's server at once (see latencies_ms)
        servers = {mode: stack.enter_context(harness.started(
            server(mode, folder / "mlp", args.traffic_workers, modes[mode]), timeout=600,
            log_dir=folder)) for mode in args.modes}
        for running in servers.values():
            every_worker_answers(running, args.traffic_workers)
        report["latency_1row_ms"] = latencies_ms(servers, body(1), 300)
        # larger than a batch: refused with batching, as TF Serving does
        report["latency_10000rows_ms"] = latencies_ms(
            {m: r for m, r in servers.items() if "batching" not in m}, body(10_000), 15)
        for mode, running in (servers.items() if not args.no_wrk else ()):
            url = f"http://127.0.0.1:{running.port}{PATH}"
            harness.run_wrk(url, wrk_body, 16, 1.0)
            cpu = running.cpu_seconds()
            found = harness.run_wrk(url, wrk_body, 16, args.seconds)
            report["rps_16"][mode] = found[0]
            # the server's CPU (master, workers, runner) per request: what the 2 cores
            # spend on one, steadier than requests/s on a shared machine
            report["cpu_ms_16"][mode] = (running.cpu_seconds() - cpu) / found[4] * 1000
        for mode in servers:
            print(mode, {k: v.get(mode) for k, v in report.items() if k != "pss_mib"},
                  flush=True)
        print(f"load average {harness.load_average()}", flush=True)
    print(json.dumps(report, indent=1))
    print(table(report, args.workers))


def table(report: dict[str, Any], workers: list[int]) -> str:
    lines = ["| measure | in_worker | runner | ratio runner / in_worker |", "| --- | --- | --- | --- |"]
    pss = report["pss_mib"]
    one = pss.get("in_worker x1")
    for count in workers if pss else ():
        ours, theirs = pss[f"runner x{count}"], pss[f"in_worker x{count}"]
        lines.append(f"| total PSS, {count} workers (MiB) | {theirs:.0f} | {ours:.0f} | "
                     f"{ours / theirs:.2f}" + (f" ({ours / one:.2f}x one in-worker worker's)"
                                                if one else "") + " |")
    for key, what in (("latency_1row_ms", "one row, 1 connection, median ms"),
                      ("latency_10000rows_ms", "10,000 rows, median ms"),
                      ("rps_16", "one row, 16 connections, requests/s"),
                      ("cpu_ms_16", "one row, 16 connections, server CPU ms a request")):
        found = report[key]
        if "in_worker" in found:
            for mode in ("runner", "runner+batching"):
                if mode in found:
                    lines.append(f"| {what} ({mode}) | {found['in_worker']:.1f} | "
                                 f"{found[mode]:.1f} | {found[mode] / found['in_worker']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
