"""State that every worker process of one server shares: flags and request metrics.

Gunicorn runs several worker processes, each with its own copy of the app, so anything
that must be the same in every worker (grps's online/offline switch, the request counts
behind a metrics page) cannot live in a Python object. It lives in files in one folder
that all workers of one server see:

* the master creates that folder once (:func:`flask_predict.server.share_state_dir`) and
  exports it as ``FLASK_PREDICT_STATE_DIR``, which every worker reads as
  ``PREDICT_STATE_DIR``; a user may also set it to a folder of their choice;
* an app embedded in a single process without that setting gets a private temporary
  folder, removed when the app's state is garbage-collected or the process exits.

**Flags** (:class:`SharedFlag`) are one small file: ``1`` for true, empty for false. The
first process to open a flag creates it with its initial value (``os.link`` of a finished
file, so no reader ever sees a half-written one and later workers never reset it); setting
the flag replaces the file atomically (``os.replace``); reading it is one ``stat`` of its
size. No lock.

**Metrics** (:class:`RequestMetrics`) are one memory-mapped file of float64 counters per
worker process, written only by that process: recording a request is a few in-memory
additions, with no system call and nothing shared between workers to wait on. A reader sums
every worker's file, including those of workers that have exited, so totals survive worker
restarts. Reads may see a request half-recorded, which a monitoring view tolerates.
"""

from __future__ import annotations

import atexit
import math
import mmap
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LATENCY_BUCKETS_MS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000,
                                         5000, 10000, math.inf)
"""Upper bounds of the latency histogram, in milliseconds."""

SECONDS_KEPT = 60
"""How many one-second buckets each worker keeps for the QPS and latency trends."""

# float64 slots of a metrics file: totals, the histogram, then a ring of per-second buckets
_COUNT, _FAILED, _LATENCY_SUM, _LATENCY_MAX = range(4)
_HISTOGRAM = 4
_RING = _HISTOGRAM + len(LATENCY_BUCKETS_MS)
_SECOND_FIELDS = 5  # stamp, count, failed, latency sum, latency max
_SLOTS = _RING + SECONDS_KEPT * _SECOND_FIELDS
_SUFFIX = ".metrics"


class StateDir:
    """The folder holding one server's shared state."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.private = path is None
        """True for a temporary folder this object created (an embedded, one-process app)."""
        if path is None:
            self.path = Path(tempfile.mkdtemp(prefix="flask-predict-state-"))
            weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)
        else:
            self.path = Path(path)
            self.path.mkdir(parents=True, exist_ok=True)

    def flag(self, name: str, initial: bool) -> SharedFlag:
        return SharedFlag(self.path / f"{name}.flag", initial)

    def metrics(self, name: str) -> RequestMetrics:
        folder = self.path / name
        folder.mkdir(exist_ok=True)
        return RequestMetrics(folder)


class SharedFlag:
    """A boolean every process of the server reads and any of them may set.

    *initial* is used only by the first process that opens the flag in this folder.
    """

    def __init__(self, path: Path, initial: bool) -> None:
        self.path = path
        self.initial = initial
        self._write(initial, create_only=True)

    def get(self) -> bool:
        """The current value: the file holds one byte when true and none when false, so
        one ``stat`` answers without opening it."""
        try:
            return os.stat(self.path).st_size > 0
        except FileNotFoundError:  # the folder was cleaned away under us
            return self.initial

    def set(self, value: bool) -> None:
        self._write(value, create_only=False)

    def _write(self, value: bool, create_only: bool) -> None:
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".flag-")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(b"1" if value else b"")
            if create_only:
                try:
                    os.link(temp, self.path)
                except FileExistsError:
                    pass
            else:
                os.replace(temp, self.path)
                temp = ""
        finally:
            if temp:
                os.unlink(temp)


@dataclass(frozen=True)
class MetricsSnapshot:
    """Request metrics summed over every worker of the server."""

    workers: int
    """How many worker files were read (exited workers included)."""
    requests: int
    failed: int
    latency_sum_ms: float
    latency_max_ms: float
    histogram: tuple[int, ...]
    """Request counts per :data:`LATENCY_BUCKETS_MS` bucket."""
    per_second: tuple[tuple[int, int, int, float, float], ...]
    """``(unix second, requests, failed, latency sum ms, latency max ms)`` for each of the
    last :data:`SECONDS_KEPT` complete seconds, oldest first."""

    @property
    def latency_avg_ms(self) -> float:
        return self.latency_sum_ms / self.requests if self.requests else 0.0

    @property
    def fail_rate(self) -> float:
        """Failed requests in percent."""
        return 100.0 * self.failed / self.requests if self.requests else 0.0

    def qps(self, seconds: int = 10) -> float:
        """Requests per second over the last *seconds* complete seconds."""
        recent = self.per_second[-seconds:]
        return sum(row[1] for row in recent) / max(len(recent), 1)

    def latency_percentile_ms(self, percent: float) -> float:
        """Upper bound of the histogram bucket holding the *percent* percentile."""
        total = sum(self.histogram)
        if not total:
            return 0.0
        wanted = total * percent / 100.0
        running = 0
        for bound, count in zip(LATENCY_BUCKETS_MS, self.histogram):
            running += count
            if running >= wanted:
                return bound if math.isfinite(bound) else self.latency_max_ms
        return self.latency_max_ms


class RequestMetrics:
    """Request counts and latencies: written per worker, read for the whole server."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()  # threads of one worker; never shared between workers
        self._pid = -1
        self._values: np.ndarray | None = None

    def _own_values(self) -> np.ndarray:
        """This process's counters, created on first use after (each) fork."""
        pid = os.getpid()
        if self._values is None or self._pid != pid:
            fd, path = tempfile.mkstemp(dir=self.folder, prefix=f"worker-{pid}-",
                                        suffix=_SUFFIX)
            try:
                os.ftruncate(fd, _SLOTS * 8)
                mapped = mmap.mmap(fd, _SLOTS * 8)
            finally:
                os.close(fd)
            self._values = np.frombuffer(mapped, dtype=np.float64)
            self._pid = pid
        return self._values

    def record(self, seconds: float, failed: bool) -> None:
        """Count one request that took *seconds*; cheap enough for every request."""
        ms = seconds * 1000.0
        now = int(time.time())
        bucket = next(i for i, bound in enumerate(LATENCY_BUCKETS_MS) if ms <= bound)
        with self._lock:
            values = self._own_values()
            values[_COUNT] += 1
            values[_FAILED] += failed
            values[_LATENCY_SUM] += ms
            if ms > values[_LATENCY_MAX]:
                values[_LATENCY_MAX] = ms
            values[_HISTOGRAM + bucket] += 1
            slot = _RING + (now % SECONDS_KEPT) * _SECOND_FIELDS
            if values[slot] != now:
                values[slot:slot + _SECOND_FIELDS] = (now, 0, 0, 0, 0)
            values[slot + 1] += 1
            values[slot + 2] += failed
            values[slot + 3] += ms
            if ms > values[slot + 4]:
                values[slot + 4] = ms

    def snapshot(self) -> MetricsSnapshot:
        """Sum every worker's counters (a read of one small file per worker)."""
        files = sorted(self.folder.glob("*" + _SUFFIX))
        total = np.zeros(_SLOTS)
        now = int(time.time())
        seconds = list(range(now - SECONDS_KEPT, now))
        per_second = {s: [s, 0, 0, 0.0, 0.0] for s in seconds}
        read = 0
        for file in files:
            try:
                values = np.fromfile(file, dtype=np.float64)
            except OSError:
                continue
            if values.size != _SLOTS:
                continue
            read += 1
            total[:_LATENCY_MAX] += values[:_LATENCY_MAX]
            total[_LATENCY_MAX] = max(total[_LATENCY_MAX], values[_LATENCY_MAX])
            total[_HISTOGRAM:_RING] += values[_HISTOGRAM:_RING]
            ring = values[_RING:].reshape(SECONDS_KEPT, _SECOND_FIELDS)
            for stamp, count, failed, latency, latency_max in ring:
                row = per_second.get(int(stamp))
                if row is not None:
                    row[1] += int(count)
                    row[2] += int(failed)
                    row[3] += float(latency)
                    row[4] = max(row[4], float(latency_max))
        return MetricsSnapshot(
            workers=read,
            requests=int(total[_COUNT]),
            failed=int(total[_FAILED]),
            latency_sum_ms=float(total[_LATENCY_SUM]),
            latency_max_ms=float(total[_LATENCY_MAX]),
            histogram=tuple(int(v) for v in total[_HISTOGRAM:_RING]),
            per_second=tuple((int(r[0]), int(r[1]), int(r[2]), float(r[3]), float(r[4]))
                             for r in (per_second[s] for s in seconds)),
        )


def create_server_dir() -> str:
    """A fresh folder for one server's state, removed when the creating process exits
    (only that process: forked workers inherit ``atexit`` handlers too)."""
    path = tempfile.mkdtemp(prefix="flask-predict-state-")
    atexit.register(_remove_if_owner, path, os.getpid())
    return path


def _remove_if_owner(path: str, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)
