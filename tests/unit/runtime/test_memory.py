"""memory: the server fixes glibc's heap thresholds in its workers, an embedding app's process
keeps glibc's own unless it asks, and an operator's glibc settings win.

Each case runs in a fresh interpreter (the thresholds are the whole process's) and reads
glibc's own accounts (``mallinfo2``): whether a block got a mapping of its own, and how much
free memory the heap kept at its top after the block was freed.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from flask_predict.runtime import memory

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the thresholds are glibc's")

MIB = 1024 * 1024
PROBE = textwrap.dedent("""
    import ctypes, json, sys
    from flask import Flask
    from flask_predict import FlaskPredict
    from flask_predict.runtime import memory
    from flask_predict.runtime import resources as runtime

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def probe(size):
        before = libc.mallinfo2().hblks
        block = libc.malloc(size)
        mapped = libc.mallinfo2().hblks > before
        libc.free(block)
        return {"mapped": mapped, "kept": libc.mallinfo2().keepcost}

    done = None
    if sys.argv[1] == "fix":
        done = memory.fix_thresholds()
    elif sys.argv[1] in ("embedded", "managed"):
        app = Flask("embedding")
        app.config.update(PREDICT_MODELS={}, PREDICT_POLL_SECONDS=0,
                          PREDICT_MANAGE_PROCESS=sys.argv[1] == "managed")
        FlaskPredict(app)
    print(json.dumps({"set": done, "2 MiB": probe(2 << 20), "8 MiB": probe(8 << 20)}))
""")


def run_probe(how: str, **environment: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    done = subprocess.run([sys.executable, "-c", PROBE, how], capture_output=True, text=True,
                          env={**env, **environment}, check=True, timeout=120)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_fixed_thresholds_keep_mid_sized_blocks_in_the_heap() -> None:
    """Blocks under 4 MiB (a large request's size) come from the heap and stay there once
    freed (up to 16 MiB at its top), so a request of a few MiB does not map and unmap them
    on every call; larger ones still get a mapping of their own, given back when freed."""
    got = run_probe("fix")
    assert got["set"] == ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
    assert got["2 MiB"]["mapped"] is False and got["2 MiB"]["kept"] >= 2 * MIB
    assert got["8 MiB"]["mapped"] is True
    assert memory.MMAP_THRESHOLD_BYTES == memory.RELEASE_AFTER_BYTES == 4 * MIB
    assert memory.TRIM_THRESHOLD_BYTES == 16 * MIB


def test_an_embedding_apps_process_keeps_glibcs_thresholds() -> None:
    assert run_probe("embedded")["2 MiB"]["mapped"] is True
    assert run_probe("managed")["2 MiB"]["mapped"] is False  # PREDICT_MANAGE_PROCESS


def test_the_operators_glibc_settings_win() -> None:
    got = run_probe("fix", MALLOC_MMAP_THRESHOLD_=str(MIB))
    assert got["set"] == ["MALLOC_TRIM_THRESHOLD_"] and got["2 MiB"]["mapped"] is True
    got = run_probe("fix", GLIBC_TUNABLES=f"glibc.malloc.trim_threshold={MIB}")
    assert got["set"] == ["MALLOC_MMAP_THRESHOLD_"]
    assert got["2 MiB"]["mapped"] is False and got["2 MiB"]["kept"] < 2 * MIB


def test_release_after_large_bodies_only() -> None:
    environ: dict[str, Any] = {}
    memory.note_size(environ, memory.RELEASE_AFTER_BYTES - 1)
    assert memory.release(environ) is False
    memory.note_size(environ, memory.RELEASE_AFTER_BYTES)
    assert memory.ENVIRON_KEY in environ
    memory.release(environ)
    assert memory.ENVIRON_KEY not in environ
