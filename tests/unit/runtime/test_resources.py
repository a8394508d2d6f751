"""runtime: each worker sizes the native thread pools of the libraries it loads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flask_predict.runtime import resources as runtime


def test_limit_threads_sets_every_pool_variable(monkeypatch: object) -> None:
    saved = {name: os.environ.get(name) for name in runtime.THREAD_VARIABLES}
    try:
        runtime.limit_threads(1)
        assert all(os.environ[name] == "1" for name in runtime.THREAD_VARIABLES)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_pools_loaded_before_and_after_are_limited() -> None:
    """In a fresh process: numpy's BLAS (loaded first) and XGBoost/scikit-learn's OpenMP
    (loaded after) both end up with the configured thread count."""
    script = textwrap.dedent("""
        import json, numpy
        from flask_predict.runtime import resources as runtime
        runtime.limit_threads(1)
        import sklearn.linear_model, xgboost
        from threadpoolctl import threadpool_info
        print(json.dumps([(p["user_api"], p["num_threads"]) for p in threadpool_info()]))
    """)
    env = {k: v for k, v in os.environ.items() if k not in runtime.THREAD_VARIABLES}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True, timeout=120)
    pools = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert pools and all(threads == 1 for _, threads in pools), pools


def test_passive_waits_keeps_a_policy_already_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    runtime.passive_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    runtime.passive_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


# --- GPU placement: one owner (runtime), decided before any framework loads -------------------

def test_predict_gpus_spread_workers() -> None:
    assert [runtime.worker_gpu([0, 1], w) for w in range(4)] == [0, 1, 0, 1]
    assert [runtime.worker_gpu((3, 1), w) for w in range(3)] == [3, 1, 3]
    assert runtime.worker_gpu([2], None) == 2


def test_without_predict_gpus_workers_take_the_detected_gpus_in_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(runtime, "NVIDIA_GPUS", str(tmp_path / "no-driver"))
    assert runtime.detected_gpus() == () and runtime.worker_gpu(None, 3) is None
    driver = tmp_path / "gpus"
    for bus in ("0000:01:00.0", "0000:02:00.0", "0000:03:00.0"):
        (driver / bus).mkdir(parents=True)
    monkeypatch.setattr(runtime, "NVIDIA_GPUS", str(driver))
    assert [runtime.worker_gpu(None, w) for w in range(4)] == [0, 1, 2, 0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")  # the operator narrowed them already
    assert [runtime.worker_gpu(None, w) for w in range(3)] == [5, 7, 5]


def test_assign_gpu_sets_visible_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # setenv first: monkeypatch then removes what assign_gpu sets (a delenv of an absent
    # variable records nothing, and "1" leaked into every later test)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(runtime, "NVIDIA_GPUS", str(tmp_path / "no-driver"))
    runtime.assign_gpu(None, 1)
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    runtime.assign_gpu((0, 1, 2), 4)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"


def test_process_threads_reads_what_limit_threads_sets(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """What limit_threads wrote in a worker's environment (OMP_NUM_THREADS first)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert runtime.process_threads() is None
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert runtime.process_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    assert runtime.process_threads() is None
