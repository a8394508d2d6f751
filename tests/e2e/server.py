"""Start a real gunicorn server (``gunicorn -c gunicorn.conf.py wsgi:app``) for end-to-end
tests, on a free port of 127.0.0.1, and stop it afterwards."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as module ``bench_<name>`` (benchmarks are not a package),
    also importable as ``<name>`` by the benchmarks loaded after it, without putting the
    benchmarks folder (which has a ``grps.py``) on ``sys.path``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class GunicornServer:
    """A gunicorn master with *workers* sync workers serving *models*.

    Use as a context manager; ``url`` is the base address. *env* adds environment variables
    (``FLASK_PREDICT_*`` settings among them).
    """

    def __init__(self, models: Any = None, workers: int = 2, env: Mapping[str, str] | None = None,
                 ready_path: str = "/v2/health/ready", ready_status: int | None = 200,
                 timeout: float = 120.0, ready_body: bytes | None = None,
                 log_path: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.ready_path = ready_path
        self.ready_status = ready_status
        self.ready_body = ready_body
        """When set, the readiness answer must also contain these bytes."""
        self.timeout = timeout
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("FLASK_PREDICT_", "MODEL_"))}
        self.env.update({"WEB_CONCURRENCY": str(workers), "PYTHONUNBUFFERED": "1"})
        if models is not None:
            self.env["FLASK_PREDICT_MODELS"] = json.dumps(models)
        self.env.update(env or {})
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def __enter__(self) -> GunicornServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def command(self) -> list[str]:
        """The server's command line (run in :attr:`cwd`)."""
        return [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py"),
                "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers), "wsgi:app"]

    cwd: Path = ROOT

    def start(self) -> None:
        self._log = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(self.command(), cwd=self.cwd, env=self.env,
                                        stdout=self._log, stderr=subprocess.STDOUT)
        self.wait_ready()

    def wait_ready(self) -> None:
        """Poll the readiness path until a worker answers it with ``ready_status`` (any
        HTTP answer when that is ``None``), or fail."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}: "
                                   f"{self.log_text()[-4000:]}")
            status, _, body = request("GET", self.url + self.ready_path, timeout=5)
            if status and (self.ready_status is None or status == self.ready_status) \
                    and (self.ready_body is None or self.ready_body in body):
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn did not become ready in {self.timeout}s: "
                           f"{self.log_text()[-4000:]}")

    def log_text(self) -> str:
        """The whole log (an access line per request makes its tail all requests)."""
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return "(no log kept)"

    def reload(self) -> None:
        """``kill -HUP`` the master: gunicorn replaces every worker gracefully."""
        assert self.process is not None
        self.process.send_signal(signal.SIGHUP)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()


class CliServer(GunicornServer):
    """``SCRIPT serve FLAGS --workers N`` (SCRIPT: a ``flask-predict`` command) run in *cwd*;
    ``{port}`` in a flag is the free port the helper chose."""

    def __init__(self, script: str, flags: list[str], cwd: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = script
        self.flags = flags
        self.cwd = cwd

    def command(self) -> list[str]:
        flags = [flag.format(port=self.port) for flag in self.flags]
        return [self.script, "serve", *flags, "--workers", str(self.workers)]


def children(pid: int) -> set[int]:
    """The pids of process *pid*'s children (a gunicorn master's workers; its runners,
    :func:`runners`, left out)."""
    return all_children(pid) - runners(pid)


def all_children(pid: int) -> set[int]:
    """Every child of *pid*, whichever of its threads started it (the master starts a
    runner again from a thread of its own)."""
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as file:
                found.update(int(child) for child in file.read().split())
        except OSError:
            continue
    return found


def runners(pid: int) -> set[int]:
    """The pids of the runner processes (``python -m flask_predict.runner``) of master *pid*."""
    found = set()
    for child in all_children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as file:
                if b"flask_predict.runner" in file.read().split(b"\0"):
                    found.add(child)
        except OSError:
            continue
    return found


def worker_pids(server: GunicornServer, want: int, timeout: float = 60,
                path: str = "/v1/projects/demo/models/echo:predict") -> set[int]:
    """The pids of the workers that answer concurrent requests, until *want* have answered.

    *path* is a predict route of the tests' custom ``echo`` model (which answers its pid
    when asked ``whoami``)."""
    pids: set[int] = set()
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(8) as pool:
        while len(pids) < want and time.monotonic() < deadline:
            answers = pool.map(lambda _: request(
                "POST", server.url + path, body={"instances": [1], "whoami": True}), range(32))
            for status, _, body in answers:
                assert status == 200, body
                pids.update(json.loads(body)["predictions"])
    return pids


def request(method: str, url: str, body: Any = None, data: bytes | None = None,
            headers: Mapping[str, str] | None = None,
            timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request; returns (status, headers, body) for any status, and status 0 when
    nothing answered."""
    if body is not None:
        data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None and "Content-Type" not in req.headers:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (urllib.error.URLError, ConnectionError, OSError):
        return 0, {}, b""
