"""The wheels ``make dist`` builds into the checkout's ``dist/``, for the tests that read them
(the Dockerfile's install line, the image build). The suite may run in several processes:
one of them at a time rebuilds and reads ``dist/``, so none reads wheels another is deleting."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = Path(tempfile.gettempdir()) / "flask-predict-tests-dist.lock"


@contextmanager
def built_dist() -> Iterator[Path]:
    """``make dist`` with this test run's virtualenv, then ``dist/`` held until the block ends."""
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["make", "-s", "-o", f"{sys.prefix}/.serving", "dist",
                        f"VENV={sys.prefix}"], cwd=ROOT, check=True, timeout=600)
        yield ROOT / "dist"
