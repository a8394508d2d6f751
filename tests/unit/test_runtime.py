"""runtime: each worker sizes the native thread pools of the libraries it loads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from flask_predict import runtime


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
        from flask_predict import runtime
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
