"""Reusable benchmark pieces: start a server, load it with ``wrk``, compare servers.

A benchmark describes :class:`Server` commands and :class:`Scenario` bodies, then calls
:func:`run_rounds`, which starts every server on a free ``127.0.0.1`` port, checks that each
answers each scenario correctly, then for several rounds warms each up and measures it with
``wrk``, the servers taking turns per scenario, and stops them. :func:`ratio_table` prints
the medians as ratios against a named baseline measured in the same run, so a noisy machine
moves all servers together.

``wrk`` (Debian package ``wrk``) must be on ``PATH``; :func:`require_wrk` says so.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

Check = Callable[["Scenario", bytes], None]
"""Raises ``AssertionError`` when a response body is not the expected answer."""


@dataclass(frozen=True)
class Scenario:
    """One kind of request: a POST body read from a file, sent at *connections*."""

    name: str
    model: str
    body_file: Path
    connections: int = 16
    rows: int = 1
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra request headers (the V2 binary extension's ``Inference-Header-Content-Length``)."""
    bodies: Mapping[str, Path] = field(default_factory=dict)
    """The same request in other body formats, by name: a server whose ``body_format`` is
    one of them is sent that file instead of *body_file*."""


@dataclass(frozen=True)
class Server:
    """A server command; ``{port}`` in its arguments and environment values is replaced.

    *path* is the URL path template for a scenario (``{model}`` is replaced); *ready_path*
    is polled with GET until the server answers at all; *check* validates one response.
    """

    name: str
    command: Sequence[str]
    path: str
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    ready_path: str = "/"
    ready_status: int | None = None
    """Wait until *ready_path* answers this status (``None``: any answer)."""
    check: Check | None = None
    models: frozenset[str] | None = None  # None: serves every scenario's model
    body_format: str = ""
    """Which of a scenario's ``bodies`` this server takes (``""``: its ``body_file``)."""
    process: str = ""
    """Servers with the same non-empty *process* are routes of one started server: the
    first one's command runs, once, and the others are measured on it."""

    def serves(self, scenario: Scenario) -> bool:
        return self.models is None or scenario.model in self.models

    def body(self, scenario: Scenario) -> Path:
        return scenario.bodies.get(self.body_format, scenario.body_file)


@dataclass(frozen=True)
class Result:
    """One ``wrk`` run."""

    server: str
    scenario: str
    round: int
    requests_per_s: float
    latency_ms_mean: float
    latency_ms_p99: float
    errors: int
    cpu_ms_per_request: float = 0.0
    """CPU time (user + system) the server's processes spent per request: unlike
    requests/s, hardly moved by other load on the machine."""


def require_wrk() -> str:
    """The path of ``wrk``, installed from Debian when it is missing and we are root; else
    exit with install instructions."""
    path = shutil.which("wrk")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing the load generator wrk (apt-get install wrk)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False)
        path = shutil.which("wrk")
    if path is None:
        sys.exit("benchmarks need the load generator wrk: apt-get install wrk")
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    print(f"load generator: {version.splitlines()[0] if version else path}", flush=True)
    return path


@dataclass(frozen=True)
class Footprint:
    """A server's start-up time and the resident memory of all its processes."""

    ready_s: float
    """From starting the command to the first answer of its ready path."""
    rss_ready_mib: float
    """Summed RSS once every scenario's answer was checked (models loaded, warm)."""
    rss_after_mib: float = 0.0
    """Summed RSS after the last round."""


@dataclass(frozen=True)
class Running:
    """A started server: its port, its process group (the command and its workers), and
    the seconds it took to answer its ready path."""

    port: int
    group: int
    ready_s: float = 0.0

    def _group_stats(self) -> Iterator[tuple[Path, list[str]]]:
        """``/proc/<pid>`` and its ``stat`` fields after the command name, for each live
        process of the group."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # the process ended meanwhile
            if int(fields[2]) == self.group:  # pgrp
                yield stat.parent, fields

    def cpu_seconds(self) -> float:
        """User + system CPU time of every live process in the group, from ``/proc``."""
        ticks = sum(int(fields[11]) + int(fields[12]) for _, fields in self._group_stats())
        return ticks / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        """The resident memory of every live process in the group, summed."""
        pages = sum(int(fields[21]) for _, fields in self._group_stats())  # rss, in pages
        return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def smaps_mib(pid: int) -> tuple[float, float]:
    """(PSS, private) of process *pid* in MiB, from ``/proc/<pid>/smaps_rollup``: its share
    of every page it maps, and what it alone maps (``Private_Clean + Private_Dirty``)."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields["Pss"] / 1024, (fields["Private_Clean"] + fields["Private_Dirty"]) / 1024


def export_in_child(code: str) -> None:
    """Run *code*, a script that exports a TensorFlow model, in a child process: the
    benchmark's own process never imports TensorFlow."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode:
        raise RuntimeError(f"TensorFlow export failed:\n{done.stderr.decode()[-4000:]}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def started(server: Server, timeout: float = 120.0, log_dir: Path | None = None
            ) -> Iterator[Running]:
    """Start *server* on a free port, wait until it answers, yield it running, stop it."""
    port = free_port()
    command = [arg.replace("{port}", str(port)) for arg in server.command]
    env = {**os.environ, **{k: v.replace("{port}", str(port)) for k, v in server.env.items()}}
    log_dir = log_dir or Path(tempfile.gettempdir())
    log_path = log_dir / f"{server.name}.log"
    begun = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, env=env, cwd=server.cwd, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_answering(port, server.ready_path, process, timeout, log_path,
                             server.ready_status)
        yield Running(port, process.pid, time.perf_counter() - begun)
    finally:
        stop(process)


def wait_until_answering(port: int, path: str, process: subprocess.Popen[bytes],
                         timeout: float, log_path: Path, status: int | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-12000:]
            raise RuntimeError(f"server exited with {process.returncode}:\n{tail}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            if status is None or response.status == status:
                return
            time.sleep(0.2)
        except OSError:
            time.sleep(0.2)
        finally:
            conn.close()
    raise RuntimeError(f"server did not answer within {timeout:.0f}s; see {log_path}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def post(port: int, path: str, body: bytes,
         headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=body,
                 headers={"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


WRK_SCRIPT = """\
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
{headers}local f = assert(io.open("{body}", "rb"))
wrk.body = f:read("*a")
f:close()

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %.3f %.3f %d\\n", summary.requests, summary.duration,
    latency.mean / 1000, latency:percentile(99) / 1000,
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""

RESULT_LINE = re.compile(r"^RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+)$", re.M)


def run_wrk(url: str, body_file: Path, connections: int, seconds: float,
            threads: int = 2, headers: Mapping[str, str] | None = None
            ) -> tuple[float, float, float, int, int]:
    """Load *url* with POSTs of *body_file*; return (requests/s, mean ms, p99 ms, errors,
    requests).

    Errors count failed connections and non-2xx/3xx answers.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        lines = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in (headers or {}).items())
        script.write(WRK_SCRIPT.replace("{body}", str(body_file.resolve()))
                     .replace("{headers}", lines))
    try:
        out = subprocess.run(
            ["wrk", f"-t{min(threads, connections)}", f"-c{connections}",
             f"-d{max(1, round(seconds))}s", "--timeout", "30s", "-s", script.name, url],
            capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    match = RESULT_LINE.search(out)
    if match is None:
        raise RuntimeError(f"could not read wrk's output:\n{out}")
    requests, duration_us = int(match[1]), int(match[2])
    return (requests / (duration_us / 1e6), float(match[3]), float(match[4]), int(match[5]),
            requests)


def check_answer(server: Server, port: int, scenario: Scenario) -> None:
    """Send the scenario's body once: a 200 and, if the server has one, its check."""
    path = server.path.replace("{model}", scenario.model)
    status, answer = post(port, path, server.body(scenario).read_bytes(), scenario.headers)
    if status != 200:
        raise RuntimeError(f"{server.name} {scenario.name}: HTTP {status}: {answer[:300]!r}")
    if server.check is not None:
        server.check(scenario, answer)


def measure(server: Server, running: Running, scenario: Scenario, round_: int,
            seconds: float, warmup: float = 1.0) -> Result:
    """Warm the running *server* up with the scenario, then load it for *seconds*."""
    url = (f"http://127.0.0.1:{running.port}"
           f"{server.path.replace('{model}', scenario.model)}")
    body = server.body(scenario)
    run_wrk(url, body, scenario.connections, warmup, headers=scenario.headers)
    cpu = running.cpu_seconds()
    rps, mean, p99, errors, requests = run_wrk(url, body, scenario.connections, seconds,
                                               headers=scenario.headers)
    cpu_ms = (running.cpu_seconds() - cpu) * 1000 / max(requests, 1)
    print(f"  round {round_} {server.name:<14} {scenario.name:<16} {rps:9.1f} req/s"
          f"  mean {mean:7.1f} ms  p99 {p99:7.1f} ms  cpu {cpu_ms:7.3f} ms/req"
          + (f"  ERRORS {errors}" if errors else ""), flush=True)
    return Result(server.name, scenario.name, round_, rps, mean, p99, errors, cpu_ms)


def run_rounds(servers: Sequence[Server], scenarios: Sequence[Scenario], rounds: int = 3,
               seconds: float = 5.0, log_dir: Path | None = None,
               footprints: dict[str, Footprint] | None = None) -> list[Result]:
    """Every server over every scenario, *rounds* times.

    All servers run at once (idle ones cost no CPU) and take turns per scenario, in an
    order that rotates, so a change in the machine's load hits every server alike rather
    than the one measured at that moment. Each answer is checked once before measuring.
    Each server process's :class:`Footprint` goes into *footprints* (by process name).
    """
    results: list[Result] = []
    with ExitStack() as stack:
        processes: dict[str, Running] = {}
        for server in servers:
            key = server.process or server.name
            if key not in processes:
                processes[key] = stack.enter_context(started(server, log_dir=log_dir))
        running = [(server, processes[server.process or server.name]) for server in servers]
        for server, process in running:
            for scenario in scenarios:
                if server.serves(scenario):
                    check_answer(server, process.port, scenario)
        ready = {key: Footprint(process.ready_s, process.rss_mib())
                 for key, process in processes.items()}
        turn = 0
        for round_ in range(1, rounds + 1):
            for scenario in scenarios:
                turn += 1
                shift = turn % len(running)
                for server, process in running[shift:] + running[:shift]:
                    if server.serves(scenario):
                        results.append(measure(server, process, scenario, round_, seconds))
        if footprints is not None:
            footprints.update({key: replace(ready[key],
                                             rss_after_mib=process.rss_mib())
                               for key, process in processes.items()})
    return results


def medians(results: Sequence[Result], metric: str = "requests_per_s"
            ) -> dict[tuple[str, str], float]:
    """Median of *metric* (a :class:`Result` field) per (server, scenario) over the rounds.

    ``requests_per_cpu_s`` is 1000 / ``cpu_ms_per_request``: a server's throughput per CPU
    second, which other load on the machine hardly moves."""
    grouped: dict[tuple[str, str], list[float]] = {}
    for r in results:
        value = (1000 / r.cpu_ms_per_request if r.cpu_ms_per_request else 0.0) \
            if metric == "requests_per_cpu_s" else getattr(r, metric)
        grouped.setdefault((r.server, r.scenario), []).append(value)
    return {key: statistics.median(values) for key, values in grouped.items()}


def spread(results: Sequence[Result], server: str, scenario: str) -> tuple[float, float]:
    values = [r.requests_per_s for r in results if (r.server, r.scenario) == (server, scenario)]
    return min(values), max(values)


def ratio_table(results: Sequence[Result], baseline: str,
                servers: Sequence[str] | None = None, metric: str = "requests_per_s") -> str:
    """A Markdown table: one row per scenario, each server's median requests/s (or another
    :func:`medians` metric) as a ratio of *baseline*'s in the same scenario (the baseline's
    own value in its column)."""
    med = medians(results, metric)
    unit = "req/s" if metric == "requests_per_s" else metric.replace("_", " ")
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    names = list(servers or dict.fromkeys(r.server for r in results))
    lines = ["| scenario | " + " | ".join(
                 f"{name} ({unit})" if name == baseline else f"{name} / {baseline}"
                 for name in names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for scenario in scenarios:
        base = med.get((baseline, scenario))
        cells = []
        for name in names:
            value = med.get((name, scenario))
            if value is None:
                cells.append("")
            elif name == baseline:
                cells.append(f"{value:.0f}")
            elif base:
                cells.append(f"{value / base:.2f}x")
            else:
                cells.append("")
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versus_table(results: Sequence[Result], ours: str, others: Sequence[str],
                 metric: str = "requests_per_s") -> str:
    """A Markdown table: one row per scenario, *ours*'s median requests/s (or another
    :func:`medians` metric), then it as a ratio of each of *others*' in the same scenario."""
    med = medians(results, metric)
    unit = "req/s" if metric == "requests_per_s" else metric.replace("_", " ")
    lines = [f"| scenario | {ours} ({unit}) | "
             + " | ".join(f"{ours} / {other}" for other in others) + " |",
             "|---" * (len(others) + 2) + "|"]
    for scenario in dict.fromkeys(r.scenario for r in results):
        value = med.get((ours, scenario))
        cells = [f"{value:.0f}" if value else ""]
        for other in others:
            theirs = med.get((other, scenario))
            cells.append(f"{value / theirs:.2f}x" if value and theirs else "")
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def raw_table(results: Sequence[Result]) -> str:
    """A Markdown table of every server's median requests/s with its min-max over rounds,
    and its median CPU time per request."""
    med = medians(results)
    cpu = medians(results, "cpu_ms_per_request")
    lines = ["| server | scenario | median req/s | min-max | CPU ms/request | rounds | errors |",
             "|---|---|---|---|---|---|---|"]
    for (server, scenario), value in med.items():
        low, high = spread(results, server, scenario)
        runs = [r for r in results if (r.server, r.scenario) == (server, scenario)]
        lines.append(f"| {server} | {scenario} | {value:.1f} | {low:.1f}-{high:.1f} | "
                     f"{cpu[server, scenario]:.3f} | {len(runs)} | "
                     f"{sum(r.errors for r in runs)} |")
    return "\n".join(lines)


def comparison_parser(description: str) -> argparse.ArgumentParser:
    """The options of a benchmark against the peers: ``--rounds``, ``--seconds``,
    ``--quick``, ``--no-peers``, ``--no-readme``; read them with :func:`comparison_args`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true",
                        help="1 round of 1 s, README untouched: to try the command out")
    parser.add_argument("--no-peers", action="store_true", help="skip KServe and MLServer")
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    return parser


def comparison_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The command line, ``--quick`` turned into 1 round of 1 s and ``--no-readme``."""
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.no_readme = 1, 1.0, True
    return args


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, for a report's first line."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def update_readme(section: str, report: str) -> None:
    """Replace the text between ``<!-- section:start -->`` and ``<!-- section:end -->`` in
    benchmarks/README.md with *report*."""
    readme = Path(__file__).resolve().parent / "README.md"
    text = readme.read_text()
    start_marker, end_marker = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    start, end = text.index(start_marker) + len(start_marker), text.index(end_marker)
    readme.write_text(text[:start] + "\n" + report + "\n" + text[end:])
