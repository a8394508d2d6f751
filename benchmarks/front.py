"""Throughput through the documented front (nginx in front of the sync workers) against
direct gunicorn: issue 2's 1-row and 100-row scenarios, both models, 16 connections.

* ``gunicorn``: ``gunicorn -c gunicorn.conf.py wsgi:app`` on 127.0.0.1, 2 sync workers;
* ``nginx+gunicorn``: the container's entry point (``deploy/container/start``) starting the
  same command on a unix socket, with nginx from deploy/nginx/ on 127.0.0.1.

``wrk`` keeps its connections alive: nginx keeps them, gunicorn's sync workers close each
one after its answer, so every direct request costs a new TCP connection.

    .venv/bin/python benchmarks/front.py [--rounds 3] [--seconds 5] [--no-readme]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import harness  # the script's own folder is on sys.path (tests load it by name first)
from harness import Server

HERE = Path(__file__).resolve().parent

ROOT = HERE.parent
START = ROOT / "deploy" / "container" / "start"
APP_COMMAND = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
"""The repository's gunicorn command; the front adds ``--bind`` to it."""


def require_nginx() -> str:
    """The path of ``nginx``; exit with install instructions when it is missing."""
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                     else None)
    if path is None:
        sys.exit("the front needs nginx: apt-get install nginx (or make system-deps)")
    return path


def environment(models: Mapping[str, object], workers: int = 2,
                extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What both servers get: the models, the worker count, 127.0.0.1 and ``{port}``."""
    return {"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": str(workers),
            "FLASK_PREDICT_MODELS": json.dumps(models), **(extra or {})}


def direct(models: Mapping[str, object], path: str, workers: int = 2,
           env: Mapping[str, str] | None = None, **server: Any) -> Server:
    """gunicorn alone, as ``gunicorn -c gunicorn.conf.py wsgi:app`` serves."""
    return Server("gunicorn", APP_COMMAND, path=path, cwd=ROOT,
                  env=environment(models, workers, env), **server)


def front(models: Mapping[str, object], path: str, run_dir: Path, workers: int = 2,
          env: Mapping[str, str] | None = None, command: Sequence[str] = APP_COMMAND,
          **server: Any) -> Server:
    """*command* (by default the same gunicorn; empty: the container's own default,
    ``flask-predict serve``) behind nginx, started as the container starts them."""
    nginx_bin = Path(require_nginx()).parent
    variables = {"PROXY_RUN_DIR": str(run_dir), "PROXY_USER": _user(),
                 "PATH": f"{Path(sys.executable).parent}:{nginx_bin}:{os.environ['PATH']}",
                 **(env or {})}
    return Server("nginx+gunicorn", [str(START), *command], path=path, cwd=ROOT,
                  env=environment(models, workers, variables), **server)


def _user() -> str:
    """This process's user: nginx started as root gives its workers this user, and they
    must reach the socket in a private temporary folder."""
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def options(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--rounds``, ``--seconds`` and ``--no-readme``; exits when ``wrk`` is missing, and
    keeps the thread variables of this shell from the servers."""
    import run

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args(argv)
    harness.require_wrk()
    for name in run.THREAD_VARIABLES:
        os.environ.pop(name, None)
    return args


def prepare(work: Path) -> tuple[dict[tuple[str, int], Path], dict[str, object]]:
    """The benchmark's ``lr`` and ``xgb`` models trained under *work*, their 1-row and 100-row
    bodies, and the ``FLASK_PREDICT_MODELS`` entries that serve them."""
    import models as bench_models

    bench_models.train(work / "models")
    bodies = bench_models.write_bodies(work, (1, 100))
    return bodies, {name: {"base_path": str(work / "models" / name)} for name in ("lr", "xgb")}


def measured(args: argparse.Namespace, what: str) -> str:
    """The first line of a report: when, where, how long; *what* ran."""
    return (f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores shared with "
            f"other work (noisy: compare the ratios, not the req/s), {args.rounds} rounds of "
            f"{args.seconds:g} s per scenario, medians; {what}.")


def main(argv: Sequence[str] | None = None) -> None:
    import run  # the answer check and scenarios

    args = options(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory(prefix="flask-predict-front-") as tmp:
        work = Path(tmp)
        bodies, models = prepare(work)
        path = "/v1/projects/bench/models/{model}:predict"
        ready = {"ready_path": "/v2/health/ready", "ready_status": 200,
                 "check": run.check_rows}
        servers = [direct(models, path, **ready), front(models, path, work / "front", **ready)]
        scenarios = run.scenarios(bodies, ["1 row, 16 conns", "100 rows, 16 conns"])
        results = harness.run_rounds(servers, scenarios, args.rounds, args.seconds,
                                     log_dir=work)
    publish(args, "front", results, [
        measured(args, "16 keep-alive connections (wrk), 2 sync workers"),
        "Requests/s against direct gunicorn:\n\n"
        + harness.ratio_table(results, "gunicorn", ["nginx+gunicorn", "gunicorn"]),
        "Requests per CPU second of all the server's processes (nginx included):\n\n"
        + harness.ratio_table(results, "gunicorn", ["nginx+gunicorn", "gunicorn"],
                              "requests_per_cpu_s")])


def publish(args: argparse.Namespace, section: str, results: Sequence[harness.Result],
            parts: Sequence[str]) -> None:
    """Print *parts* and the per-round table; write them to README.md's *section* unless
    ``--no-readme``."""
    report = "\n\n".join([*parts, "Per round:\n\n" + harness.raw_table(results)])
    print("\n" + report)
    if not args.no_readme:
        harness.update_readme(section, report)


if __name__ == "__main__":
    main()
