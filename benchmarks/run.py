"""The speed benchmark: every route of flask-predict against KServe, MLServer and the floors.

One command measures, in one run, the 20-feature LogisticRegression ``lr`` and the 100-tree
XGBoost ``xgb`` (``models.py``) at four sizes (1 row at 1 connection, 1 row at 16, 100 rows at
16, 10,000 rows at 2) on:

* flask-predict (``gunicorn -c gunicorn.conf.py wsgi:app``, 2 sync workers, with what a
  production server has on: ``/metrics``, the access log and the gRPC server): its AI
  Platform, TF Serving, V2 JSON and grps routes, one server;
* KServe (V1 ``:predict`` and V2 ``/infer``, one server) and MLServer (V2), the peers
  (``peers.py``, their own venv, 2 workers each);
* the floors (``floors.py``, 2 gunicorn sync workers): ``bare-wsgi``, a WSGI callable that
  drains the body and answers a constant, and ``flask-floor``, the cheapest Flask view doing
  the same.

No thread environment variable reaches any server: each sizes its own pools. The medians of
the rounds become one table of ratios against the fastest peer, one against the Flask floor,
and the raw figures; they are printed, written to ``results/`` and to ``README.md``.

    .venv/bin/python benchmarks/run.py [--rounds 3] [--seconds 5] [--quick] [--no-peers]
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floors  # noqa: E402
import harness  # noqa: E402
import models  # noqa: E402
import peers  # noqa: E402
from harness import Footprint, Result, Scenario, Server  # noqa: E402

ROOT = HERE.parent
SIZES = {"1 row, 1 conn": (1, 1), "1 row, 16 conns": (1, 16),
         "100 rows, 16 conns": (100, 16), "10,000 rows, 2 conns": (10_000, 2)}
"""Column name -> (rows per request, connections)."""
ROUTES = {"AI Platform": ("/v1/projects/bench/models/{model}:predict", "instances"),
          "TF Serving": ("/v1/models/{model}:predict", "instances"),
          "V2 JSON": ("/v2/models/{model}/infer", "v2"),
          "grps": ("/grps/v1/infer/predict?model={model}", "grps")}
"""flask-predict's routes: name -> (path, body format)."""
PEERS = ("kserve V1", "kserve V2", "mlserver V2")
FLOORS = ("bare-wsgi", "flask-floor")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                    "FLASK_PREDICT_THREADS", "FLASK_PREDICT_WORKERS")


def scenarios(bodies: dict[tuple[str, int], Path], sizes: Sequence[str]) -> list[Scenario]:
    found = []
    for model in ("lr", "xgb"):
        for size in sizes:
            count, connections = SIZES[size]
            formats = {name: bodies[name, count] for name in models.BODIES}
            found.append(Scenario(f"{model} {size}", model, formats["instances"],
                                  connections=connections, rows=count, bodies=formats))
    return found


def answer_rows(answer: bytes) -> int:
    """How many rows a V1, V2 or grps answer holds."""
    body = json.loads(answer)
    if "predictions" in body:
        return len(body["predictions"])
    if "gtensors" in body:
        return int(body["gtensors"]["tensors"][0]["shape"][0])
    return int(body["outputs"][0]["shape"][0])


def check_rows(scenario: Scenario, answer: bytes) -> None:
    if answer_rows(answer) != scenario.rows:
        raise AssertionError(f"{scenario.name}: not {scenario.rows} rows: {answer[:200]!r}")


def servers(models_dir: Path, with_peers: bool) -> list[Server]:
    config = {name: {"base_path": str(models_dir / name)} for name in ("lr", "xgb")}
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
    env = {"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
           "FLASK_PREDICT_MODELS": json.dumps(config),
           "FLASK_PREDICT_GRPC_PORT": str(harness.free_port())}
    found = [Server(route, command, path=path, cwd=ROOT, env=env, ready_path="/v2/health/ready",
                    ready_status=200, body_format=body, process="flask-predict",
                    check=check_rows)
             for route, (path, body) in ROUTES.items()]
    if with_peers:
        found += [dataclasses.replace(server, check=check_rows)
                  for server in [*peers.kserve(models_dir), peers.mlserver(models_dir)]]
    found += [Server(name, floors.gunicorn_command(app), path="/")
              for name, app in zip(FLOORS, ("bare", "flask_app"))]
    return found


def fastest_peer(medians: dict[tuple[str, str], float], scenario: str) -> str | None:
    measured = [(medians[peer, scenario], peer) for peer in PEERS if (peer, scenario) in medians]
    return max(measured)[1] if measured else None


def route_table(results: Sequence[Result], sizes: Sequence[str], against: str,
                metric: str = "requests_per_s") -> str:
    """Rows: route x model; columns: sizes; cells: the route's median as a ratio of
    *against*'s (``"peer"``: the fastest peer in that column, named in the cell)."""
    med = harness.medians(results, metric)
    lines = ["| route (ours) | model | " + " | ".join(sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for route in ROUTES:
        for model in ("lr", "xgb"):
            cells = []
            for size in sizes:
                scenario = f"{model} {size}"
                base = fastest_peer(med, scenario) if against == "peer" else against
                ours, theirs = med.get((route, scenario)), med.get((base or "", scenario))
                label = f" ({base})" if against == "peer" else ""
                cells.append(f"{ours / theirs:.2f}x{label}" if ours and theirs else "n/a")
            lines.append(f"| {route} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def peers_and_floors_table(results: Sequence[Result], sizes: Sequence[str]) -> str:
    """Each peer and the bare floor against the Flask floor: what bounds each column."""
    med = harness.medians(results)
    names = [n for n in (*PEERS, "bare-wsgi") if any(r.server == n for r in results)]
    lines = ["| server | model | " + " | ".join(sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for name in names:
        for model in ("lr", "xgb"):
            cells = []
            for size in sizes:
                value = med.get((name, f"{model} {size}"))
                floor = med.get(("flask-floor", f"{model} {size}"))
                cells.append(f"{value / floor:.2f}x" if value and floor else "n/a")
            lines.append(f"| {name} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def footprint_table(footprints: Mapping[str, Footprint], base: str = "flask-predict") -> str:
    """Start-up time and memory of each server process, with ratios to *base*'s."""
    ours = footprints.get(base)
    lines = ["| server | ready (s) | RSS when ready (MiB) | RSS after the runs (MiB) |"
             f" ready / {base} | RSS after / {base} |", "|---|---|---|---|---|---|"]
    for name, seen in footprints.items():
        ratios = (f"{seen.ready_s / ours.ready_s:.2f}x | "
                  f"{seen.rss_after_mib / ours.rss_after_mib:.2f}x" if ours else "n/a | n/a")
        lines.append(f"| {name} | {seen.ready_s:.2f} | {seen.rss_ready_mib:.0f} | "
                     f"{seen.rss_after_mib:.0f} | {ratios} |")
    return "\n".join(lines)


def report(results: Sequence[Result], sizes: Sequence[str], rounds: int, seconds: float,
           load_before: str, footprints: Mapping[str, Footprint]) -> str:
    sections = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores, {rounds} "
        f"round(s) of {seconds:g} s per scenario, medians; 2 workers per server. Load average "
        f"(1/5/15 min) before: {load_before}; after: {harness.load_average()}.",
        "Requests/s against the fastest peer in the same column (named):\n\n"
        + route_table(results, sizes, "peer"),
        "Requests per CPU second of the server's processes against the peer that spends the "
        "least CPU per request in the same column (what other load on the machine hardly "
        "moves):\n\n" + route_table(results, sizes, "peer", "requests_per_cpu_s"),
        "Requests/s against the Flask floor (the cheapest Flask view, same gunicorn):\n\n"
        + route_table(results, sizes, "flask-floor"),
        "Requests per CPU second of the server's processes against the Flask floor (what "
        "other load on the machine hardly moves):\n\n"
        + route_table(results, sizes, "flask-floor", "requests_per_cpu_s"),
        "Peers and the bare floor against the Flask floor (requests/s):\n\n"
        + peers_and_floors_table(results, sizes),
        "Start-up and memory, 2 workers per server (ours and the peers with both models; the "
        "floors with none; RSS summed over each server's processes, master included):\n\n"
        + footprint_table(footprints),
        "Per server and scenario:\n\n" + harness.raw_table(results)]
    return "\n\n".join(sections)


def main() -> None:
    parser = harness.comparison_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", choices=list(SIZES), default=list(SIZES),
                        metavar="SIZE", help=f"columns to measure (default: all of {list(SIZES)})")
    args = harness.comparison_args(parser)

    harness.require_wrk()
    for name in THREAD_VARIABLES:
        os.environ.pop(name, None)
    load_before = harness.load_average()
    with tempfile.TemporaryDirectory(prefix="flask-predict-bench-") as tmp:
        work = Path(tmp)
        models_dir = models.train(work / "models")
        counts = tuple(sorted({SIZES[size][0] for size in args.sizes}))
        bodies = models.write_bodies(work, counts)
        footprints: dict[str, Footprint] = {}
        results = harness.run_rounds(servers(models_dir, not args.no_peers),
                                     scenarios(bodies, args.sizes), args.rounds, args.seconds,
                                     log_dir=work, footprints=footprints)
    text = report(results, args.sizes, args.rounds, args.seconds, load_before, footprints)
    print("\n" + text)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / time.strftime("%Y%m%d-%H%M%S.md")).write_text(text + "\n")
    if not args.no_readme:
        harness.update_readme("results", text)


if __name__ == "__main__":
    main()
