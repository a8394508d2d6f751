"""deploy/container/start, the container's entry point, as a process supervisor: SIGTERM lets
requests in flight finish and stops nginx and gunicorn; the app dying stops the container."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import load_benchmark, request
from tests.models import make_sleepy, sleepy_config

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx")]

harness = load_benchmark("harness")
front = load_benchmark("front")


def start(models: dict[str, Any], run_dir: Path, log: Path,
          command: list[str] | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """The entry point with its default command (flask-predict serve), or *command*, behind
    nginx, as in the container; (process, port)."""
    server = front.front(models, "/", run_dir, command=command or [])
    port = harness.free_port()
    env = {**os.environ, **{k: v.replace("{port}", str(port)) for k, v in server.env.items()}}
    with open(log, "wb") as out:
        process = subprocess.Popen(list(server.command), cwd=server.cwd, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    return process, port


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_sigterm_finishes_requests_in_flight_then_stops_both(tmp_path: Path) -> None:
    models = {"sleepy": sleepy_config(make_sleepy(tmp_path / "sleepy"))}
    process, port = start(models, tmp_path / "run", tmp_path / "log")
    try:
        harness.wait_until_answering(port, "/v2/health/ready", process, 120, tmp_path / "log",
                                     200)
        nginx_pid = int((tmp_path / "run" / "nginx.pid").read_text())
        answers: list[tuple[int, Any]] = []
        url = f"http://127.0.0.1:{port}/v1/projects/p/models/sleepy:predict"
        slow = threading.Thread(target=lambda: answers.append(
            request("POST", url, {"instances": [{"sleep": 4}]}, timeout=60)[::2]))
        slow.start()
        threading.Event().wait(1.5)  # the request is in a worker
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) == 0, (tmp_path / "log").read_text()[-3000:]
        slow.join()
        status, body = answers[0]
        assert status == 200 and json.loads(body)["predictions"], body
        assert not alive(nginx_pid)
        assert "Shutting down: Master" in (tmp_path / "log").read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_the_app_exiting_stops_nginx_and_the_container(tmp_path: Path) -> None:
    models = {"gone": {"base_path": str(tmp_path / "missing")}}  # gunicorn refuses to start
    process, _ = start(models, tmp_path / "run", tmp_path / "log")
    try:
        assert process.wait(timeout=90) != 0
        log = (tmp_path / "log").read_text()
        assert "configuration error" in log
        pid_file = tmp_path / "run" / "nginx.pid"
        # nginx did not start, or has stopped (`nginx -t` may leave an empty pid file)
        pid = pid_file.read_text().strip() if pid_file.exists() else ""
        assert not pid or not alive(int(pid))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_probes_before_the_apps_socket_exists_log_nothing(tmp_path: Path) -> None:
    """nginx starts once gunicorn has made its socket: probes sent before (here the app takes
    3 s to start) find the port closed, and nginx logs no [crit] connect() to a missing
    socket for them; then the probe answers."""
    models = {"sleepy": sleepy_config(make_sleepy(tmp_path / "sleepy"))}
    late = ["bash", "-c", 'sleep 3; exec flask-predict serve "$@"', "serve"]
    process, port = start(models, tmp_path / "run", tmp_path / "log", command=late)
    try:
        url = f"http://127.0.0.1:{port}/v2/health/ready"
        early = [request("GET", url, timeout=5)[0] for _ in range(10)]
        assert not (tmp_path / "run" / "app.sock").exists()
        assert early == [0] * 10  # nothing listens yet: not ready
        harness.wait_until_answering(port, "/v2/health/ready", process, 120, tmp_path / "log",
                                     200)
        log = (tmp_path / "log").read_text()
        assert "[crit]" not in log and "connect() to unix:" not in log, log
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
