"""Issue 54's benchmark: 1,000 small models from one machine under a per-worker memory cap.

A lazy root (``PREDICT_LAZY_ROOT``) of 1,000 models trained here, 800 scikit-learn
decision trees and 200 XGBoost boosters, served by ``gunicorn -c gunicorn.conf.py wsgi:app``
with 4 sync workers and a cap (``PREDICT_LAZY_MAX_BYTES``) of 100 times their mean size per
worker, beside two configured (pinned) models, a tree and a booster: the baselines, each
compared with the lazy models of its kind. Three phases:

* **cold**: one request each to 200 models never asked before (each a load in the worker
  that gets it): p50 and p99 against the configured model of its kind, asked in between;
* **Zipf**: ``--seconds`` of requests from ``--clients`` threads, each for a model drawn
  from a Zipf distribution over the 1,000 (exponent ``--zipf``), every tenth replaced by
  the configured model of the kind drawn: the hit rate (the server's
  ``flask_predict_lazy_hits`` against its misses, this phase only), p50/p99 of the
  :data:`HITS` hottest models (hits) and of the 20 hottest against the configured model's,
  and every answer's status (5xx and 4xx counted);
* **memory**: every ``--scrape`` seconds of the Zipf phase, each worker's heap
  (``RssAnon``) and mapped files (``RssFile``), and the bytes its lazy tier holds
  (``flask_predict_lazy_bytes``, read from ``/metrics`` as Prometheus would).

    .venv/bin/python benchmarks/many_models.py [--seconds 600] [--clients 8] [--zipf 1.1]
        [--scrape 15]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS, BOOSTERS, WORKERS, HOLD = 1000, 200, 4, 100
HITS = 5
"""The hottest models, asked so often in every worker that the tier always holds them: their
requests are hits (the 20 hottest, also shown, are sometimes evicted between two requests
in a worker, at a miss rate near one half, and then loaded again)."""
PINNED = ("pinned_tree", "pinned_booster")
"""The configured models, one of each kind of the root's: a hit is compared with its kind's."""
ROW = [[0.1, -0.2, 0.3]]


def is_booster(name: str) -> bool:
    return name == "pinned_booster" or (name.startswith("m")
                                        and int(name[1:]) % (MODELS // BOOSTERS) == 0)


def train(folder: Path) -> Path:
    """The 1,000 models of the root and the configured ones; returns the root."""
    import joblib
    import xgboost as xgb
    from sklearn.tree import DecisionTreeRegressor

    root = folder / "root"
    for n in range(MODELS):
        rng = np.random.default_rng(n)
        x, y = rng.normal(size=(300, 3)), rng.normal(size=300)
        version = root / f"m{n:04}" / "1"
        version.mkdir(parents=True)
        if n % (MODELS // BOOSTERS) == 0:
            booster = xgb.train({"objective": "reg:squarederror", "max_depth": 4,
                                 "nthread": 1}, xgb.DMatrix(x, label=y), num_boost_round=10)
            booster.save_model(version / "model.json")
        else:
            joblib.dump(DecisionTreeRegressor(random_state=0).fit(x, y),
                        version / "model.joblib")
    rng = np.random.default_rng(10**6)
    x, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    for kind in PINNED:
        pinned = folder / kind / "1"
        pinned.mkdir(parents=True)
        if kind == "pinned_booster":
            xgb.train({"objective": "reg:squarederror", "max_depth": 4, "nthread": 1},
                      xgb.DMatrix(x, label=y), num_boost_round=10).save_model(
                pinned / "model.json")
        else:
            joblib.dump(DecisionTreeRegressor(random_state=0).fit(x, y),
                        pinned / "model.joblib")
    return root


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def post(url: str) -> tuple[int, float]:
    data = json.dumps({"instances": ROW}).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
            status = answer.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = 0
    return status, time.perf_counter() - started


def metric(base: str, name: str) -> list[float]:
    with urllib.request.urlopen(base + "/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if re.match(rf"{name}(\{{| )", line)]


def rss(pid: int) -> tuple[int, int]:
    """A process's resident memory: its heap and other private pages (``RssAnon``), and
    its mapped files' (``RssFile``, the metrics' shared files among them), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if line.startswith("Rss"))
    return (int(fields["RssAnon"].split()[0]) * 1024, int(fields["RssFile"].split()[0]) * 1024)


def workers(master: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                found.append(int(entry.name))
    return sorted(found)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--scrape", type=float, default=15.0,
                        help="seconds between two reads of /metrics and of memory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="many-models-"))
    try:
        run(work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(work: Path, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    root = train(work)
    sizes = [folder_bytes(root / name) for name in os.listdir(root)]
    cap = HOLD * int(statistics.mean(sizes))
    print(f"trained {MODELS} models in {time.perf_counter() - started:.0f}s; mean "
          f"{statistics.mean(sizes) / 1024:.1f} KiB; cap {cap / 2**20:.1f} MiB per worker")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLASK_PREDICT_")}
    pinned = {kind: {"base_path": str(work / kind)} for kind in PINNED}
    env.update({"FLASK_PREDICT_MODELS": json.dumps(pinned),
                "FLASK_PREDICT_LAZY_ROOT": str(root), "FLASK_PREDICT_LAZY_MAX_BYTES": str(cap),
                "FLASK_PREDICT_METRICS_PATH": "/metrics", "FLASK_PREDICT_ACCESS_LOG": "",
                "WEB_CONCURRENCY": str(WORKERS)})
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                               "--bind", f"127.0.0.1:{port}", "wsgi:app"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while post(base + "/v1/models/pinned_tree:predict")[0] != 200:
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        measure(base, server.pid, args)
    finally:
        server.terminate()
        server.wait(30)


def measure(base: str, master: int, args: argparse.Namespace) -> None:
    names = [f"m{n:04}" for n in range(MODELS)]
    order = names[:]
    random.Random(1).shuffle(order)
    cold: dict[bool, list[float]] = {False: [], True: []}
    pinned: dict[bool, list[float]] = {False: [], True: []}
    for name in order[:200]:  # never asked before: a load wherever it lands
        status, seconds = post(f"{base}/v1/models/{name}:predict")
        assert status == 200, (name, status)
        booster = is_booster(name)
        cold[booster].append(seconds)
        pinned[booster].append(post(f"{base}/v1/models/{PINNED[booster]}:predict")[1])
    for booster, kind in ((False, "trees"), (True, "boosters")):
        print(f"cold loads of {kind}: p50 {pct(cold[booster], .5):.2f} ms, p99 "
              f"{pct(cold[booster], .99):.2f} ms; its configured kind between them: p50 "
              f"{pct(pinned[booster], .5):.2f} ms, p99 {pct(pinned[booster], .99):.2f} ms")

    ranks = np.arange(1, MODELS + 1, dtype=float) ** -args.zipf
    weights = ranks / ranks.sum()
    zipf_order = names[:]
    random.Random(2).shuffle(zipf_order)  # which model is hot is not its name's order
    hits0 = sum(metric(base, "flask_predict_lazy_hits_total"))
    misses0 = sum(metric(base, "flask_predict_lazy_misses_total"))
    results: list[tuple[str, int, float]] = []
    lock = threading.Lock()
    stop = time.monotonic() + args.seconds

    def client(seed: int) -> None:
        rng = np.random.default_rng(seed)
        count = 0
        while time.monotonic() < stop:
            count += 1
            name = zipf_order[rng.choice(MODELS, p=weights)]
            if count % 10 == 0:  # the configured model of the kind drawn
                name = PINNED[is_booster(name)]
            status, seconds = post(f"{base}/v1/models/{name}:predict")
            with lock:
                results.append((name, status, seconds))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    for thread in threads:
        thread.start()
    memory: list[tuple[float, list[tuple[int, int]], list[float]]] = []
    began = time.monotonic()
    while any(thread.is_alive() for thread in threads):
        pids = workers(master)
        memory.append((time.monotonic() - began, [rss(pid) for pid in pids],
                       metric(base, "flask_predict_lazy_bytes")))
        time.sleep(args.scrape)
    for thread in threads:
        thread.join()
    hits = sum(metric(base, "flask_predict_lazy_hits_total")) - hits0
    misses = sum(metric(base, "flask_predict_lazy_misses_total")) - misses0
    warm = results[len(results) // 5:]  # past the first fifth: the hot set is loaded
    errors = sum(1 for _, status, _ in results if status >= 500 or status == 0)
    refused = sum(1 for _, status, _ in results if 400 <= status < 500)
    print(f"Zipf {args.zipf}, {args.seconds:.0f} s, {args.clients} clients: {len(results)} "
          f"requests ({len(results) / args.seconds:.0f}/s), {errors} 5xx or unanswered, "
          f"{refused} 4xx; "
          f"hit rate {hits / max(1, hits + misses):.3f} ({hits:.0f} hits, {misses:.0f} misses)")
    for (booster, kind), top in itertools.product(((False, "trees"), (True, "boosters")),
                                                  (HITS, 20)):
        hits_of = [s for name, _, s in warm
                   if name in zipf_order[:top] and is_booster(name) == booster]
        baseline = [s for name, _, s in warm if name == PINNED[booster]]
        if not hits_of:
            continue
        print(f"{top} hottest, {kind} ({len(hits_of)}): p50 {pct(hits_of, .5):.2f} ms, p99 "
              f"{pct(hits_of, .99):.2f} ms; configured {kind[:-1]} ({len(baseline)}): p50 "
              f"{pct(baseline, .5):.2f} ms, p99 {pct(baseline, .99):.2f} ms; ratios p50 "
              f"{pct(hits_of, .5) / pct(baseline, .5):.2f}, p99 "
              f"{pct(hits_of, .99) / pct(baseline, .99):.2f}")
    print("memory: seconds, each worker's heap (RssAnon, MiB) / mapped files (RssFile, MiB), "
          "each worker's lazy bytes (MiB)")
    for at, sizes, held in memory:
        print(f"  {at:5.0f}  " + " ".join(f"{a / 2**20:6.1f}/{f / 2**20:5.1f}" for a, f in sizes)
              + "  |  " + " ".join(f"{b / 2**20:5.1f}" for b in held))


if __name__ == "__main__":
    main()
