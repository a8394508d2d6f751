"""The runner process: the versions whose framework cannot be forked, loaded once per machine
(or per GPU) and run for every sync worker that asks over the Unix socket.

Each version is an :class:`Entry`, keyed by what loads it (plugin, folder, options), so the
workers that serve the same version share one load; it stays while a live worker holds it
(its process ids; a worker that dies without releasing is found by the reaper). What is
loaded is written to a state file after every change, so a runner that crashed and was
started again loads the same versions before it says it is ready. One thread per worker
connection; TensorFlow sessions and ONNX Runtime sessions run concurrent calls themselves.

Every execution goes through :meth:`Entry.run`, the one function that turns a version's
inputs into its outputs; the batching scheduler wraps it (:attr:`Runner.batching`,
:mod:`.batched`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..models.startup import cause_of
from ..errors import ModelNotReady, PredictError
from ..models.plugins import load_predictor_class
from ..models.served import close_predictor
from ..models.warmup import warm_up
from ..predictor import Predictor
from ..types import Tensor
from ..models import runner_describe as describe
from ..models import runner_wire as wire
from .batched import Batching
from ..settings.batching import BatchingParameters

logger = logging.getLogger(__name__)

def entry_key(plugin: str, path: str, options: Mapping[str, Any]) -> str:
    """The handle of a version: the same in every worker and across runner restarts."""
    text = json.dumps([plugin, os.path.abspath(path), options], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Entry:
    """One loaded version, shared by the workers that hold it."""

    def __init__(self, key: str, plugin: str, path: str, options: Mapping[str, Any],
                 predictor: Predictor, warmed: int) -> None:
        self.key = key
        self.plugin = plugin
        self.path = path
        self.options = dict(options)
        self.predictor = predictor
        self.metadata = describe.metadata_to_json(predictor.metadata())
        self.warmed = warmed
        self.holders: set[int] = set()
        self.batching: BatchingParameters | None = None
        """What its calls batch with (``None``: each runs alone)."""
        self.executions: dict[tuple[str, str], int] = {}
        """Executions per (model, version) the workers named: what Triton counts as
        ``nv_inference_exec_count`` (one per batch once batching groups calls)."""

    def run(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None,
            signature: str | None) -> dict[str, Tensor]:
        """The version's tensor door: what a batch runs once for all its callers."""
        return self.predictor.predict_tensors(inputs, outputs, signature)

    def counted(self, model: str, version: str) -> None:
        key = (model, version)
        self.executions[key] = self.executions.get(key, 0) + 1


class Runner:
    """The versions of one runner process and the socket it answers on."""

    def __init__(self, socket_path: str, state_file: str | None = None,
                 lookup: Callable[[str], type[Predictor]] = load_predictor_class,
                 parent: int | None = None, label: str = "") -> None:
        self.socket_path = socket_path
        self.state_file = state_file
        self.lookup = lookup
        self.parent = parent
        self.label = label
        self.boot = uuid.uuid4().hex
        """Told to every caller: a worker sees that the runner it spoke to was replaced."""
        self.entries: dict[str, Entry] = {}
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.batching: Batching | None = None
        """Set where the settings batch (``PREDICT_BATCHING`` and its kin)."""
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._busy = 0
        self._idle = threading.Condition()
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()

    # --- serving ---------------------------------------------------------------------------

    def listen(self) -> None:
        """Bind the socket (a stale one from a runner that died is replaced)."""
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        os.chmod(self.socket_path, 0o600)
        listener.listen(256)
        listener.settimeout(0.5)
        self._listener = listener

    def serve(self) -> None:
        """Accept workers until :meth:`stop`; then drain the calls running and close."""
        assert self._listener is not None
        threading.Thread(target=self._reap, name="runner-reaper", daemon=True).start()
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                if self.parent is not None and os.getppid() != self.parent:
                    logger.error("flask_predict runner: the server that started it is gone; "
                                 "stopping")
                    self.stopping.set()
                continue
            except OSError:
                break
            conn.settimeout(None)
            threading.Thread(target=self._connection, args=(conn,), daemon=True,
                             name="runner-connection").start()
        self._drain()

    def stop(self) -> None:
        self.stopping.set()

    def _drain(self, seconds: float = 30.0) -> None:
        """Finish the calls running (TERM drains), then close every version."""
        if self._listener is not None:
            self._listener.close()
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass
        if self.batching is not None:  # the queued batches run now
            self.batching.close()
        end = time.monotonic() + seconds
        with self._idle:
            while self._busy and time.monotonic() < end:
                self._idle.wait(0.1)
        with self._lock:
            entries, self.entries = list(self.entries.values()), {}
            connections, self._connections = self._connections, set()
        for conn in connections:  # idle between calls now: each worker sees the runner gone
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for entry in entries:
            close_predictor(entry.predictor, entry.path, 0)

    def _connection(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
        try:
            self._serve_connection(conn)
        finally:
            with self._lock:
                self._connections.discard(conn)

    def _serve_connection(self, conn: socket.socket) -> None:
        reader = wire.Reader(conn)
        with conn:
            while True:
                try:
                    message = reader.receive()
                except (OSError, wire.WireError):
                    return
                if message is None:
                    return
                header, arrays = message
                with self._idle:
                    self._busy += 1
                try:
                    reply, out = self._answer(header, arrays)
                finally:
                    with self._idle:
                        self._busy -= 1
                        self._idle.notify_all()
                reply["boot"] = self.boot
                try:
                    wire.send(conn, reply, out)
                except (OSError, TypeError, ValueError) as exc:
                    if isinstance(exc, OSError):
                        return  # the worker gave up on the call (its deadline) or died
                    wire.send(conn, {"boot": self.boot, "error": describe.error_to_json(exc)})

    def _answer(self, header: Mapping[str, Any], arrays: dict[str, np.ndarray]
                ) -> tuple[dict[str, Any], Mapping[str, np.ndarray] | None]:
        op = header.get("op")
        try:
            if op == "call":
                return self._call(header, arrays)
            if op == "hello":
                return {"ready": self.ready.is_set() and not self.stopping.is_set(),
                        "pid": os.getpid()}, None
            if op == "load":
                entry = self.load(str(header["plugin"]), str(header["path"]),
                                  dict(header.get("options") or {}), int(header["pid"]))
                return {"handle": entry.key, "metadata": entry.metadata,
                        "warmed": entry.warmed, "class": type(entry.predictor).__name__}, None
            if op == "release":
                self.release(str(header["handle"]), int(header["pid"]))
                return {}, None
            if op == "stats":
                return {"stats": self.stats(), "ready": self.ready.is_set(),
                        "batching": self.batching.report() if self.batching else None}, None
            return {"error": {"kind": "", "code": "", "message": f"unknown op {op!r}"}}, None
        except Exception as exc:
            if op != "call":
                logger.warning("flask_predict runner%s: %s failed: %s", self.label, op,
                               cause_of(exc))
            elif not isinstance(exc, PredictError):
                logger.error("flask_predict runner%s: a call failed", self.label, exc_info=exc)
            return {"error": describe.error_to_json(exc)}, None

    def _call(self, header: Mapping[str, Any], arrays: dict[str, np.ndarray]
              ) -> tuple[dict[str, Any], Mapping[str, np.ndarray] | None]:
        entry = self.entries.get(str(header["handle"]))
        if entry is None:
            if not self.ready.is_set():  # loading again what it held: "unavailable" at once
                return {"error": describe.error_to_json(ModelNotReady(
                    "the model runner is loading its versions again; try again"))}, None
            return {"unknown": True}, None
        method = header["method"]
        signature = header.get("signature")
        outputs = header.get("outputs")
        model, version = str(header.get("model") or ""), str(header.get("version") or "")
        if method == "predict":
            if self.batching is not None and entry.batching is not None and model \
                    and version.isdigit():
                deadline = header.get("deadline")
                return {}, self.batching.submit(
                    entry.batching, entry.key, model, int(version), signature, outputs, arrays,
                    None if deadline is None else time.monotonic() + float(deadline))
            entry.counted(model, version)
            return {}, entry.run(arrays, outputs, signature)
        entry.counted(model, version)
        examples = describe.examples_from_arrays(int(header["count"]), arrays)
        if method == "classify":
            found = entry.predictor.classify(examples, signature)
            out = {name: value for name, value in
                   (("classes", found.classes), ("scores", found.scores)) if value is not None}
            return {}, out
        if method == "regress":
            return {}, {"values": entry.predictor.regress(examples, signature)}
        raise ValueError(f"unknown method {method!r}")

    # --- versions --------------------------------------------------------------------------

    def load(self, plugin: str, path: str, options: Mapping[str, Any], holder: int) -> Entry:
        """The version loaded with *plugin* from *path* with *options*, loaded now unless
        another worker's load did already; *holder* (a process id) holds it."""
        key = entry_key(plugin, path, options)
        with self._lock:
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:
            entry = self.entries.get(key)
            if entry is None:
                entry = self._load(key, plugin, path, options)
            with self._lock:
                entry.holders.add(holder)
                self.entries[key] = entry
            self._save()
        return entry

    def _load(self, key: str, plugin: str, path: str, options: Mapping[str, Any]) -> Entry:
        started = time.perf_counter()
        logger.info("flask_predict runner%s: loading %s with plugin %r", self.label, path,
                    plugin)
        predictor = self.lookup(plugin).from_path(path, **dict(options))
        try:
            warmed = warm_up(predictor, path)
        except Exception:
            close_predictor(predictor, path, 0)
            raise
        logger.info("flask_predict runner%s: %s loaded with %s in %.2fs%s", self.label, path,
                    type(predictor).__name__, time.perf_counter() - started,
                    f" ({warmed} warm-up requests)" if warmed else "")
        entry = Entry(key, plugin, path, options, predictor, warmed)
        if self.batching is not None:
            entry.batching = self.batching.parameters_for(path)
        return entry

    def release(self, key: str, holder: int) -> None:
        """*holder* no longer serves the version; the last one out closes it."""
        with self._lock:
            entry = self.entries.get(key)
            if entry is None:
                return
            entry.holders.discard(holder)
            if entry.holders:
                return
            del self.entries[key]
        logger.info("flask_predict runner%s: %s unloaded (no worker holds it)", self.label,
                    entry.path)
        close_predictor(entry.predictor, entry.path, 0)
        self._save()

    def _reap(self) -> None:
        """Drop the holds of workers that died without releasing them (SIGKILL)."""
        while not self.stopping.wait(2.0):
            for entry in list(self.entries.values()):
                for pid in list(entry.holders):
                    if not _alive(pid):
                        self.release(entry.key, pid)

    def stats(self) -> list[dict[str, Any]]:
        return [{"path": entry.path, "plugin": entry.plugin, "holders": len(entry.holders),
                 "executions": [[m, v, n] for (m, v), n in sorted(entry.executions.items())]}
                for entry in list(self.entries.values())]

    # --- restarts --------------------------------------------------------------------------

    def _save(self) -> None:
        if self.state_file is None:
            return
        with self._lock:
            saved = [{"plugin": e.plugin, "path": e.path, "options": e.options,
                      "holders": sorted(e.holders)} for e in self.entries.values()]
        partial = f"{self.state_file}.{os.getpid()}.partial"
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(saved, file, default=str)
        os.replace(partial, self.state_file)

    def restore(self) -> None:
        """Load again what the previous runner held for workers still alive, then say ready."""
        saved: list[dict[str, Any]] = []
        if self.state_file is not None:
            try:
                with open(self.state_file, encoding="utf-8") as file:
                    saved = json.load(file)
            except (OSError, ValueError):
                saved = []
        for item in saved:
            holders = [pid for pid in item.get("holders", ()) if _alive(int(pid))]
            if not holders or self.stopping.is_set():
                continue
            try:
                for pid in holders:
                    self.load(item["plugin"], item["path"], item.get("options") or {}, pid)
            except Exception as exc:
                logger.error("flask_predict runner%s: %s did not load again: %s",
                             self.label, item["path"], cause_of(exc))
        self._save()
        self.ready.set()
        logger.info("flask_predict runner%s: ready (%d versions)", self.label,
                    len(self.entries))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
