"""The gunicorn master's runners (:mod:`flask_predict.runner`): started by exec (a fresh
``python -m flask_predict.runner``, never a fork of this process), one per machine, or one
per GPU with ``CUDA_VISIBLE_DEVICES`` narrowed to it; started again when one exits; stopped
(``TERM``: it drains its calls) when the master exits.

The runners start in ``when_ready``, before the first worker forks, and their sockets are
named to the workers in :data:`~flask_predict.models.runner_client.SOCKETS_VARIABLE`; each
socket's name holds the master's pid, so the new master of a ``USR2`` upgrade runs its own
beside the old one's. The count of restarts and each runner's up state are written to a file
of the server's state folder, which the workers' metrics and status page read.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Sequence

from ..models.runner_client import BOARD_VARIABLE, SOCKETS_VARIABLE

logger = logging.getLogger(__name__)

RESTART_BACKOFF = (0.1, 0.5, 1.0, 2.0, 5.0)
"""Seconds before starting a runner again, by how many times it exited in a row quickly."""


class RunnerProcess:
    """One runner and the thread that starts it again whenever it exits."""

    def __init__(self, index: int, state_dir: str, gpu: int | None,
                 board: RunnerBoard, environ: dict[str, str]) -> None:
        self.index = index
        self.environ = environ
        """The master's environment before it sized its own pools to one thread."""
        self.gpu = gpu
        stem = os.path.join(state_dir, f"runner-{os.getpid()}-{index}")
        self.socket_path = f"{stem}.sock"
        self.state_file = f"{stem}.json"
        self.board = board
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopping = threading.Event()

    def start(self) -> None:
        self._spawn()
        threading.Thread(target=self._watch, name=f"flask-predict-runner-{self.index}",
                         daemon=True).start()

    def _spawn(self) -> None:
        label = f"gpu{self.gpu}" if self.gpu is not None else f"{self.index}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flask_predict.runner", "--socket", self.socket_path,
             "--state", self.state_file, "--parent", str(os.getpid()), "--label", label],
            env=self._environment(), close_fds=True)
        logger.info("flask_predict: runner %s started (pid %d)", label, self.process.pid)
        self.board.update(self)

    def _environment(self) -> dict[str, str]:
        env = dict(self.environ)
        env.pop(SOCKETS_VARIABLE, None)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        return env

    def _watch(self) -> None:
        quick = 0
        while not self._stopping.is_set():
            assert self.process is not None
            started = time.monotonic()
            code = self.process.wait()
            self.board.update(self)
            if self._stopping.is_set():
                return
            quick = quick + 1 if time.monotonic() - started < 10 else 0
            self.restarts += 1
            logger.error("flask_predict: runner %d (pid %d) exited with %s; starting it again",
                         self.index, self.process.pid, _how(code))
            if self._stopping.wait(RESTART_BACKOFF[min(quick, len(RESTART_BACKOFF) - 1)]):
                return
            self._spawn()

    @property
    def up(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, seconds: float) -> None:
        """``TERM``: the runner finishes its calls, then exits; ``KILL`` after *seconds*."""
        self._stopping.set()
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self.board.update(self)


class RunnerBoard:
    """The runners' state for the workers (metrics, status page): a JSON file, replaced whole."""

    def __init__(self, state_dir: str) -> None:
        self.path = os.path.join(state_dir, f"runners-{os.getpid()}.json")
        self.runners: list[RunnerProcess] = []
        self._lock = threading.Lock()

    def update(self, changed: RunnerProcess | None = None) -> None:
        with self._lock:
            data = [{"index": r.index, "gpu": r.gpu, "socket": r.socket_path,
                     "pid": r.process.pid if r.process else None, "up": r.up,
                     "restarts": r.restarts} for r in self.runners]
            partial = f"{self.path}.partial"
            with open(partial, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.replace(partial, self.path)


class Runners:
    """Every runner of this master."""

    def __init__(self, state_dir: str, gpus: Sequence[int]) -> None:
        self.board = RunnerBoard(state_dir)
        placed: Sequence[int | None] = list(gpus) or [None]
        # taken now, before the master limits its own pools to one thread (the operator's
        # thread variables reach the runner; the master's limit does not)
        environ = dict(os.environ)
        self.processes = [RunnerProcess(i, state_dir, gpu, self.board, environ)
                          for i, gpu in enumerate(placed)]
        self.board.runners = self.processes

    def start(self, wait: float = 30.0) -> None:
        """Start every runner; return once each listens (or after *wait* seconds)."""
        for process in self.processes:
            process.start()
        end = time.monotonic() + wait
        while time.monotonic() < end and not all(
                os.path.exists(p.socket_path) or not p.up for p in self.processes):
            time.sleep(0.05)
        os.environ[SOCKETS_VARIABLE] = os.pathsep.join(p.socket_path for p in self.processes)
        os.environ[BOARD_VARIABLE] = self.board.path

    def stop(self, seconds: float = 30.0) -> None:
        for process in self.processes:
            process.stop(seconds)


def _how(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"
