"""Under real gunicorn: each worker holds one index (and so one GPU), and a worker that dies
is replaced by one that takes the index it freed, never one a live worker holds."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

PLACED = re.compile(r"\[(\d+)\] \[INFO\] worker (\d+) uses GPU (\d+)")


def placements(log: Path) -> dict[int, tuple[int, int]]:
    """pid -> (worker index, GPU) as the workers logged them."""
    return {int(pid): (int(index), int(gpu))
            for pid, index, gpu in PLACED.findall(log.read_text(errors="replace"))}


def wait_for(predicate: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_respawned_worker_takes_the_freed_gpu(model_config: dict[str, Any],
                                                tmp_path: Path) -> None:
    log = tmp_path / "log"
    env = {"FLASK_PREDICT_GPUS": "0,1", "LOG_LEVEL": "INFO"}
    with GunicornServer(model_config, workers=2, env=env, log_path=log):
        first = wait_for(lambda: len(placements(log)) == 2 and placements(log))
        assert sorted(first.values()) == [(0, 0), (1, 1)]
        victim = next(pid for pid, (index, _) in first.items() if index == 0)
        os.kill(victim, signal.SIGKILL)
        later = wait_for(lambda: len(placements(log)) == 3 and placements(log))
        (new_pid,) = set(later) - set(first)
        assert later[new_pid] == (0, 0), "the replacement took the dead worker's GPU"
