"""Instructions per request, in one process: each route against the Flask floor view.

Wall and CPU time move with whatever else runs on the machine; the count of instructions a
request executes hardly does. For each route and model this runs a child process (the app
as ``wsgi.py`` builds it, called through its WSGI callable as ``profile_requests.py`` does)
twice under ``perf stat -e instructions:u``, once with *calls* requests more than the other:
the difference over *calls* is what one request costs, start-up and warm-up cancelled out.
The Flask floor view (``floors.flask_app``) fed the same body is the baseline.

    .venv/bin/python benchmarks/instructions.py [--rows 1] [--calls 2000] [--routes "AI Platform"]

Counts with ``perf`` (Debian ``linux-perf``) where the kernel lets this user count its own
instructions; where it does not (``perf stat`` prints ``<not supported>``, as in many virtual
machines), with valgrind's callgrind instead, about 50 times slower (a minute a child), and
then the main thread's alone by default (``--threads``, :data:`THREADS`). The garbage
collector is off while the requests are counted: its cost is left out, and with it the one
thing that moved the same tree's count between runs.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402
from run import ROUTES  # noqa: E402

FLOOR = "flask-floor"
WARM_UP = 200


def child(models_dir: Path, route: str, model: str, rows: int, calls: int) -> None:
    """Run *calls* requests of *route* (after a warm-up) in this process."""
    import floors
    import profile_requests

    os.environ["FLASK_PREDICT_POLL_SECONDS"] = "0"  # no watcher thread counting with the rest
    os.environ["FLASK_PREDICT_LOAD_WAIT_SECONDS"] = "3600"  # under callgrind: minutes

    values = models.rows(rows)
    bodies = {name: writer(values) for name, writer in models.BODIES.items()}
    if route == FLOOR:
        call = profile_requests.wsgi_call(floors.flask_app, "/", bodies["instances"])
    else:
        path, body = ROUTES[route]
        app = profile_requests.make_app(models_dir)
        call = profile_requests.wsgi_call(app, path.replace("{model}", model), bodies[body])
    for _ in range(WARM_UP):
        call()
    # the collector off while counting: when a collection runs depends on allocation
    # counts since the interpreter started, so a full one landed in one child and not the
    # other and moved a route's count by 30k to 60k. The count is the requests' own code.
    gc.collect()
    gc.disable()
    for _ in range(calls):
        call()


HASH_SEED = "0"
"""Every child hashes strings with the same seed: a dict's probes, and so the instructions
of a look-up, depend on it (two runs of the same tree differed by 25k instructions a
request with random seeds)."""


def instructions(models_dir: Path, route: str, model: str, rows: int, calls: int) -> int:
    """The user-space instructions of one child process."""
    child_command = [sys.executable, __file__, "--child", str(models_dir), route, model,
                     str(rows), str(calls)]
    env = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
    if perf_counts():
        done = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", *child_command],
                              capture_output=True, text=True, check=True, env=env)
        for line in done.stderr.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions"):
                return int(fields[0])
        raise RuntimeError(f"no instruction count from perf: {done.stderr[-2000:]}")
    with tempfile.TemporaryDirectory(prefix="flask-predict-callgrind-") as out:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                               f"--callgrind-out-file={out}/cg", *child_command],
                              capture_output=True, text=True, check=True, env=env)
        counts = {path.name: _total(path) for path in Path(out).glob("cg-*")}
    if not counts:
        raise RuntimeError(f"no instruction count from callgrind: {done.stderr[-2000:]}")
    if THREADS == "main":  # thread 1 serves the requests; the others wake on their clocks
        return counts["cg-01"]
    return sum(counts.values())


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


THREADS = "main"
"""Count the main thread alone (``main``: the thread that serves the requests) or every
thread (``all``). Under callgrind a run is some 50 times slower, so the threads that wake on
a clock (the metrics flusher once a second, the model watcher) run many more times per
request than they would, the more so the busier the machine: counted, they moved the same
tree's count by up to 10% between runs. ``perf`` counts the whole process either way."""


@functools.lru_cache(maxsize=1)
def perf_counts() -> bool:
    """Whether ``perf stat`` counts this user's instructions here."""
    done = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "true"],
                          capture_output=True, text=True)
    return done.returncode == 0 and "not supported" not in done.stderr


def per_request(models_dir: Path, route: str, model: str, rows: int, calls: int) -> float:
    base = instructions(models_dir, route, model, rows, 0)
    return (instructions(models_dir, route, model, rows, calls) - base) / calls


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        folder, route, model, rows, calls = sys.argv[2:7]
        child(Path(folder), route, model, int(rows), int(calls))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--models", nargs="*", default=["lr", "xgb"], choices=("lr", "xgb"))
    parser.add_argument("--routes", nargs="*", default=list(ROUTES), choices=list(ROUTES))
    parser.add_argument("--threads", default="main", choices=("main", "all"),
                        help="callgrind: count the main thread alone, or every thread")
    args = parser.parse_args()
    global THREADS
    THREADS = args.threads
    with tempfile.TemporaryDirectory(prefix="flask-predict-instructions-") as tmp:
        models_dir = models.train(Path(tmp) / "models")
        floor = per_request(models_dir, FLOOR, "lr", args.rows, args.calls)
        print(f"Flask floor view: {floor / 1000:.1f}k instructions per request "
              f"({args.rows} row(s))\n")
        print("| route | model | k instructions per request | over the floor | x floor |")
        print("|---|---|---|---|---|")
        for route in args.routes:
            for model in args.models:
                spent = per_request(models_dir, route, model, args.rows, args.calls)
                print(f"| {route} | {model} | {spent / 1000:.1f} | "
                      f"{(spent - floor) / 1000:+.1f}k | {spent / floor:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
