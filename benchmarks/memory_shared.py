"""Issue 35's memory benchmark: one copy of a large model per machine, not per worker.

A ``KNeighborsClassifier`` over 14 million rows of 4 features (its KD-tree and training
data: about 1 GiB in memory) is served with 1, 2, 4 and 8 workers by:

* flask-predict, ``gunicorn -c gunicorn.conf.py wsgi:app``: ``shared`` (the model loads
  once, in the master; the default) and ``private`` (``FLASK_PREDICT_SHARED_MODELS=false``:
  each worker loads its own, as before);
* MLServer (mlserver-sklearn, ``parallel_workers``) and KServe (``kserve_server.py``,
  ``--workers``), from their own venvs (``peers.py``).

For each: the total PSS of every process of the server and the largest private memory
(``Private_Clean + Private_Dirty``) of one process, from ``/proc/<pid>/smaps_rollup``, once
each worker has answered; then again after five hot swaps (flask-predict: five new version
folders, each waited for in every worker; MLServer: five repository loads of the model;
KServe's server has no hot swap). Ratios are against flask-predict ``private`` with one
worker in the same run. Also: start-up (command to ready) and one-row latency of the two
flask-predict modes (median of 300 sequential requests, 2 workers).

    .venv/bin/python benchmarks/memory_shared.py [--workers 1 2 4 8] [--rows 14000000]
        [--no-peers]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import peers  # noqa: E402
from memory_reload import get  # noqa: E402

ROOT = HERE.parent
FEATURES = 4
SWAPS = 5
ROW = [0.1, -0.2, 0.3, 0.05]


def build(root: Path, rows: int) -> Path:
    """``root/knn/1/model.joblib`` and a tiny XGBoost model KServe's script also wants."""
    import joblib
    import xgboost as xgb
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, FEATURES))
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    (root / "knn" / "1").mkdir(parents=True)
    joblib.dump(KNeighborsClassifier(algorithm="kd_tree").fit(x, y),
                root / "knn" / "1" / "model.joblib")
    (root / "xgb" / "1").mkdir(parents=True)
    small = rng.normal(size=(200, FEATURES))
    xgb.train({"objective": "binary:logistic", "nthread": 1},
              xgb.DMatrix(small, label=small[:, 0] > 0), 5).save_model(
        root / "xgb" / "1" / "model.json")
    return root


def group_memory(group: int) -> tuple[float, float]:
    """(total PSS, largest private of one process) over the process group, MiB."""
    total, largest = 0.0, 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != group:
                continue
            pss, private = harness.smaps_mib(int(stat.parent.name))
        except (OSError, IndexError, KeyError, ValueError):
            continue
        total += pss
        largest = max(largest, private)
    return total, largest


def ours(root: Path, workers: int, shared: bool) -> harness.Server:
    return harness.Server(
        name=f"flask-predict {'shared' if shared else 'private'}",
        path="/v1/projects/p/models/{model}:predict", cwd=ROOT,
        command=[sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                 "--bind", "127.0.0.1:{port}", "--workers", str(workers), "wsgi:app"],
        env={"FLASK_PREDICT_MODELS": json.dumps({"knn": {"base_path": str(root / "knn")}}),
             "FLASK_PREDICT_POLL_SECONDS": "1", "FLASK_PREDICT_SHARED_MODELS":
             "true" if shared else "false", "WEB_CONCURRENCY": str(workers)},
        ready_path="/v2/health/ready", ready_status=200)


def mlserver(root: Path, workers: int) -> harness.Server:
    repository = root / f"mlserver-{workers}"
    (repository / "knn").mkdir(parents=True)
    (repository / "knn" / "model-settings.json").write_text(json.dumps({
        "name": "knn", "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": str(root / "knn" / "1" / "model.joblib"), "version": "1"}}))
    (repository / "settings.json").write_text(json.dumps({
        "parallel_workers": workers, "metrics_endpoint": None, "debug": False,
        "grpc_port": harness.free_port(), "metrics_port": harness.free_port()}))
    return harness.Server(
        "mlserver", [str(peers.peer_venv("mlserver") / "bin" / "python"), "-m",
                     "mlserver.cli.main", "start", str(repository)],
        path="/v2/models/{model}/infer", ready_path="/v2/models/knn/ready", ready_status=200,
        env={"MLSERVER_HTTP_PORT": "{port}", "MLSERVER_HOST": "127.0.0.1"})


def kserve(root: Path, workers: int) -> harness.Server:
    return harness.Server(
        "kserve", [str(peers.peer_venv("kserve") / "bin" / "python"),
                   str(HERE / "kserve_server.py"), "--lr_dir", str(root / "knn" / "1"),
                   "--xgb_dir", str(root / "xgb" / "1"), "--http_port", "{port}",
                   "--workers", str(workers)],
        path="/v1/models/lr:predict", ready_path="/v1/models/lr", ready_status=200)


def body(server: harness.Server) -> bytes:
    if server.name == "mlserver":
        return json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, FEATURES],
                                       "data": ROW}]}).encode()
    return json.dumps({"instances": [ROW]}).encode()


def touch_every_worker(server: harness.Server, port: int, workers: int) -> None:
    path = server.path.replace("{model}", "knn")
    for _ in range(6 * workers):
        status, answer = harness.post(port, path, body(server))
        assert status == 200, answer[:300]


def swap_ours(root: Path, port: int, workers: int, log: Path, version: int) -> None:
    """Publish *version* (hard links of version 1's file) and wait until every worker serves
    it and the rollout is done."""
    staging = root / "knn" / f".{version}.tmp"
    staging.mkdir()
    os.link(root / "knn" / "1" / "model.joblib", staging / "model.joblib")
    done = log.read_text(errors="replace").count("worker(s) replaced")
    staging.rename(root / "knn" / str(version))
    deadline = time.monotonic() + 600
    while log.read_text(errors="replace").count("worker(s) replaced") <= done:
        assert time.monotonic() < deadline, "the rollout did not finish"
        time.sleep(0.5)
    for _ in range(4 * workers):
        status, data = get(port, "/v2/models/knn")
        assert status == 200 and json.loads(data)["versions"] == [str(version)], data
    if version > 2:  # the replaced version's folder goes, as in a real rollout
        shutil.rmtree(root / "knn" / str(version - 1))


def swap_mlserver(port: int) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v2/repository/models/knn/load", body=b"{}",
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def one_row_ms(server: harness.Server, port: int, count: int = 300) -> float:
    path = server.path.replace("{model}", "knn")
    times = []
    for _ in range(count):
        began = time.perf_counter()
        harness.post(port, path, body(server))
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def measure(server: harness.Server, root: Path, workers: int, log_dir: Path
            ) -> Iterator[dict[str, Any]]:
    with harness.started(server, timeout=1200, log_dir=log_dir) as running:
        touch_every_worker(server, running.port, workers)
        time.sleep(1)
        pss, private = group_memory(running.group)
        row: dict[str, Any] = {"server": server.name, "workers": workers, "pss": pss,
                               "private": private, "ready_s": running.ready_s}
        print(f"{server.name:<22} {workers} workers: PSS {pss:8.0f} MiB, largest private "
              f"{private:7.0f} MiB, ready in {running.ready_s:5.1f}s", flush=True)
        if server.name.startswith("flask-predict") and workers == 2:
            row["one_row_ms"] = one_row_ms(server, running.port)
            print(f"{'':<22} one row: {row['one_row_ms']:.2f} ms (median of 300)", flush=True)
        if server.name == "flask-predict shared":
            for version in range(2, SWAPS + 2):
                swap_ours(root, running.port, workers, log_dir / f"{server.name}.log", version)
        elif server.name == "mlserver":
            statuses = [swap_mlserver(running.port) for _ in range(SWAPS)]
            if any(status != 200 for status in statuses):
                row["swap_errors"] = statuses
                print(f"{'':<22} repository loads answered {statuses}", flush=True)
        if server.name in ("flask-predict shared", "mlserver"):
            touch_every_worker(server, running.port, workers)
            time.sleep(1)
            row["pss_swapped"], row["private_swapped"] = group_memory(running.group)
            print(f"{'':<22} after {SWAPS} swaps: PSS {row['pss_swapped']:8.0f} MiB, "
                  f"largest private {row['private_swapped']:7.0f} MiB", flush=True)
        if server.name == "flask-predict shared":  # back to version 1 for the next count
            for path in (root / "knn").iterdir():
                if path.name != "1":
                    shutil.rmtree(path)
        yield row


def table(rows: list[dict[str, Any]]) -> str:
    """Each server's total PSS against its own with the fewest workers (before swaps), and
    against flask-predict ``private`` with the fewest workers."""
    def first(name: str) -> float:
        return float(min((r for r in rows if r["server"] == name),
                         key=lambda r: r["workers"])["pss"])
    base = first("flask-predict private")
    lines = ["| server | workers | total PSS | vs its fewest workers | vs private, fewest "
             "| largest private | PSS after 5 swaps | vs its fewest workers |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        own = first(r["server"])
        swapped = (f"{r['pss_swapped']:,.0f} MiB | {r['pss_swapped'] / own:.2f}x"
                   if "pss_swapped" in r else "n/a | n/a")
        lines.append(f"| {r['server']} | {r['workers']} | {r['pss']:,.0f} MiB | "
                     f"{r['pss'] / own:.2f}x | {r['pss'] / base:.2f}x | "
                     f"{r['private']:,.0f} MiB | {swapped} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rows", type=int, default=14_000_000)
    parser.add_argument("--no-peers", dest="peers", action="store_false")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memory-shared-"))
    try:
        began = time.perf_counter()
        build(root, args.rows)
        size = os.path.getsize(root / "knn" / "1" / "model.joblib") / 2**20
        print(f"model.joblib {size:,.0f} MiB, built in {time.perf_counter() - began:.0f}s",
              flush=True)
        rows: list[dict[str, Any]] = []
        for workers in args.workers:
            servers = [ours(root, workers, False), ours(root, workers, True)]
            if args.peers:
                servers += [mlserver(root, workers), kserve(root, workers)]
            for server in servers:
                rows.extend(measure(server, root, workers, root))
        print()
        print(f"KNN index, model.joblib {size:,.0f} MiB; {os.cpu_count()} cores")
        print(table(rows))
        timed = {r["server"]: r for r in rows if "one_row_ms" in r}
        if len(timed) == 2:
            shared, private = timed["flask-predict shared"], timed["flask-predict private"]
            ratio = shared["one_row_ms"] / private["one_row_ms"]
            print(f"\none row, 2 workers: shared {shared['one_row_ms']:.2f} ms, private "
                  f"{private['one_row_ms']:.2f} ms ({ratio:.2f}x); "
                  f"ready in {shared['ready_s']:.1f}s against {private['ready_s']:.1f}s "
                  f"({shared['ready_s'] / private['ready_s']:.2f}x)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
