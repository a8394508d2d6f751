"""Slow clients against sync workers, with and without the front (issue 15).

20 connections trickle request headers (one line every 2 s) and 20 trickle bodies (one byte
every 2 s) for the whole run, reconnecting whenever the server drops them, while one client
sends normal 1-row requests one after another. Against bare gunicorn (2 sync workers) the
tricklers hold both workers and the normal requests wait or fail; through nginx they cost
only connections in nginx. The e2e test ``tests/e2e/test_front_nginx.py`` asserts the front's
half; this script prints both.

    .venv/bin/python benchmarks/slow_clients.py [--seconds 30] [--no-readme]
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import front  # the script's own folder is on sys.path (tests load these by name first)
import harness

INTERVAL = 2.0
"""Seconds between two trickled header lines or body bytes."""


@dataclass(frozen=True)
class Outcome:
    """The normal requests sent during one run."""

    sent: int
    answered: int
    """Answered with 200."""
    latencies: tuple[float, ...]
    """Seconds, of every request (a failed one counts the time until it failed)."""

    @property
    def p99(self) -> float:
        if len(self.latencies) < 2:
            return max(self.latencies, default=0.0)
        return statistics.quantiles(self.latencies, n=100)[98]


def _trickle(port: int, head: bytes, drip: bytes, stop: threading.Event) -> None:
    """Send *head*, then *drip* every :data:`INTERVAL` until *stop*; reconnect when the
    server closes the connection."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                conn.sendall(head)
                while not stop.wait(INTERVAL):
                    conn.sendall(drip)
        except OSError:
            stop.wait(0.1)  # dropped by the server: come back


@contextmanager
def slow_clients(port: int, path: str, headers: int = 20, bodies: int = 20) -> Iterator[None]:
    """*headers* connections trickling header lines and *bodies* trickling a body to *path*,
    for as long as the ``with`` block runs."""
    stop = threading.Event()
    request_line = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    body_head = request_line + b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    threads = [threading.Thread(target=_trickle, args=(port, request_line, b"X-Slow: 1\r\n",
                                                        stop), daemon=True)
               for _ in range(headers)]
    threads += [threading.Thread(target=_trickle, args=(port, body_head, b" ", stop),
                                 daemon=True)
                for _ in range(bodies)]
    for thread in threads:
        thread.start()
    time.sleep(INTERVAL)  # every trickler connected and sending
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)


def normal_requests(port: int, path: str, body: bytes, seconds: float,
                    timeout: float = 60.0) -> Outcome:
    """One request after another (a fresh connection each) for *seconds*."""
    latencies, answered = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            conn.close()
            answered += response.status == 200
        except OSError:
            pass
        latencies.append(time.monotonic() - start)
        time.sleep(0.05)
    return Outcome(len(latencies), answered, tuple(latencies))


def main(argv: Sequence[str] | None = None) -> None:
    import models as bench_models  # the benchmark's models and bodies

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="flask-predict-slow-") as tmp:
        work = Path(tmp)
        bench_models.train(work / "models")
        models = {"lr": {"base_path": str(work / "models" / "lr")}}
        path = "/v1/projects/bench/models/lr:predict"
        body = bench_models.instances(bench_models.rows(1))
        ready = {"ready_path": "/v2/health/ready", "ready_status": 200}
        for server in (front.direct(models, path, **ready),
                       front.front(models, path, work / "front", **ready)):
            with harness.started(server, log_dir=work) as running:
                with slow_clients(running.port, path):
                    outcome = normal_requests(running.port, path, body, args.seconds)
            rows.append(f"| {server.name} | {outcome.sent} | {outcome.answered} | "
                        f"{outcome.p99:.2f} | {max(outcome.latencies):.2f} |")
            print(rows[-1], flush=True)
    report = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} shared cores: "
        f"{args.seconds:g} s of 20 header and 20 body tricklers (one line or byte every "
        f"{INTERVAL:g} s) while one client sends 1-row requests one after another "
        "(2 sync workers, gunicorn timeout 60 s).", "",
        "| server | normal requests sent | answered 200 | p99 s | slowest s |",
        "|---|---|---|---|---|", *rows])
    print("\n" + report)
    if not args.no_readme:
        harness.update_readme("slow_clients", report)


if __name__ == "__main__":
    main()
