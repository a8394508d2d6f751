"""A sync worker's side of the runner (:mod:`flask_predict.runner`): the proxy predictor that
stands where a TensorFlow or ONNX Runtime predictor stood, and the socket it calls through.

Under the packaged gunicorn server the master starts the runners and names their sockets in
:data:`SOCKETS_VARIABLE`; a worker's plugin lookup (:func:`runner_lookup`) then hands the
repository, for a plugin whose manifest says ``runner``, a :class:`RunnerPredictor` class
instead of the framework's: loading a version asks the runner to load it (or to share the
load another worker asked for), and its metadata, signatures included, comes back, so the
protocols, codecs, metrics, traces and the payload log work in the worker exactly as before
and the worker never imports the framework. An app that embeds the extension has no
runner: its models load in its own process, as they always did.

A call that cannot reach the runner (it crashed, it is being started again) answers
``UNAVAILABLE`` (503) at once; readiness says not ready until the runner is back with its
versions loaded again.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from ..runtime import deadline
from ..request.record import current_request
from ..errors import DeadlineExceeded, ModelNotReady
from ..predictor import Predictor
from . import runner_describe as describe
from . import runner_wire as wire
from ..types import Classification, Example, ModelMetadata, ModelSpec, Tensor
from .plugins import Manifest, manifests

SOCKETS_VARIABLE = "PREDICT_RUNNER_SOCKETS"
"""The runners' sockets, separated by ``os.pathsep``, set by the gunicorn master for its
workers (one runner per machine, or one per GPU); not a ``FLASK_`` variable, so no app
reads it as a setting."""
BOARD_VARIABLE = "PREDICT_RUNNER_BOARD"
"""The file, in the server's state folder, where the master keeps each runner's socket, pid,
up state and restarts (:mod:`flask_predict.process.runners`; read by metrics and the status
page)."""
LOAD_WAIT = 120.0
"""Seconds a load waits for a runner that is not answering (starting, or starting again)."""
UNREACHABLE = "the model runner is not reachable (it is starting again); try again"


class RunnerClient:
    """One runner's socket, with a connection per thread (a worker's HTTP thread and its
    gRPC threads each have their own)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close every thread's connection (a worker's client lives as long as it does)."""
        with self._lock:
            found, self._open = self._open, set()
        for conn in found:
            conn.close()

    def request(self, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None,
                timeout: float | None = None, wait: float = 0.0
                ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send one message, read its answer. A connection found broken is replaced once
        (the runner was started again since); a runner that does not answer raises
        :class:`ModelNotReady` (after trying again for *wait* seconds: a load waits for a
        runner that is starting), one past *timeout* seconds :class:`DeadlineExceeded`."""
        end = time.monotonic() + wait
        while True:
            try:
                return self._request(header, arrays, timeout)
            except ModelNotReady:
                if time.monotonic() >= end:
                    raise
                time.sleep(0.1)

    def _request(self, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None,
                 timeout: float | None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        for attempt in (0, 1):
            reader, fresh = self._connection()
            conn = reader.sock
            try:
                if conn.gettimeout() != timeout:  # (settimeout is a system call each time)
                    conn.settimeout(timeout)
                wire.send(conn, header, arrays)
                reply = reader.receive()
            except socket.timeout:
                self._drop()
                raise DeadlineExceeded("the model runner did not answer within the time limit")
            except (OSError, wire.WireError):
                reply = None
            if reply is not None:
                return reply
            self._drop()
            if fresh:
                break
        raise ModelNotReady(UNREACHABLE)

    def ready(self) -> bool:
        """Whether the runner answers and has loaded again what it held before a restart."""
        try:
            reply, _ = self.request({"op": "hello"}, timeout=2.0)
        except Exception:
            return False
        return bool(reply.get("ready"))

    def _connection(self) -> tuple[wire.Reader, bool]:
        reader: wire.Reader | None = getattr(self._local, "reader", None)
        if reader is not None:
            return reader, False
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(2.0)
            conn.connect(self.path)
        except OSError:
            conn.close()
            raise ModelNotReady(UNREACHABLE) from None
        self._local.reader = wire.Reader(conn)
        with self._lock:
            self._open.add(conn)
        return self._local.reader, True

    def _drop(self) -> None:
        reader: wire.Reader | None = getattr(self._local, "reader", None)
        self._local.reader = None
        if reader is not None:
            with self._lock:
                self._open.discard(reader.sock)
            reader.sock.close()


class RunnerPredictor(Predictor):
    """A version loaded in the runner, as the worker sees it: the framework predictor's
    metadata, and its tensor door, ``classify`` and ``regress`` run there. The instances door
    and the rest are the contract's defaults over the tensor door, as for the framework's
    own predictor (its plugins override none of them)."""

    plugin: ClassVar[str] = ""
    client: ClassVar[RunnerClient]

    def __init__(self, model_dir: str, options: Mapping[str, Any], reply: Mapping[str, Any]
                 ) -> None:
        self.model_dir = model_dir
        self.options = dict(options)
        self.handle = str(reply["handle"])
        self.runner_class = str(reply.get("class", ""))
        """The framework predictor's class name in the runner (for the log)."""
        self._metadata = describe.metadata_from_json(reply["metadata"])

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Predictor:
        """Have the runner load (or share) the version in *model_dir*."""
        return cls(model_dir, options, cls._load(model_dir, options))

    @classmethod
    def _load(cls, model_dir: str, options: Mapping[str, Any],
              timeout: float | None = None) -> dict[str, Any]:
        reply, _ = cls.client.request({"op": "load", "plugin": cls.plugin, "path": model_dir,
                                       "options": dict(options), "pid": os.getpid()},
                                      timeout=timeout, wait=LOAD_WAIT if timeout is None else 0)
        if "error" in reply:
            raise describe.error_from_json(reply["error"])
        return reply

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        return self._call({"method": "predict", "signature": signature,
                           "outputs": None if outputs is None else list(outputs)}, inputs)

    def classify(self, examples: Sequence[Example],
                 signature: str | None = None) -> Classification:
        found = self._call({"method": "classify", "signature": signature,
                            "count": len(examples)}, describe.examples_to_arrays(examples))
        return Classification(classes=found.get("classes"), scores=found.get("scores"))

    def regress(self, examples: Sequence[Example], signature: str | None = None) -> Tensor:
        return self._call({"method": "regress", "signature": signature, "count": len(examples)},
                          describe.examples_to_arrays(examples))["values"]

    def _call(self, header: dict[str, Any], arrays: Mapping[str, Tensor]) -> dict[str, Tensor]:
        header["op"] = "call"
        record = current_request.get()
        if record is not None and record.model is not None:
            header["model"], header["version"] = record.model, record.version
        for attempt in (0, 1):
            header["handle"] = self.handle
            with deadline.native() as seconds:
                header["deadline"] = seconds
                reply, out = self.client.request(header, arrays, timeout=seconds)
            if reply.get("unknown") and attempt == 0:
                # a runner started again without this version (it was not told of it):
                # loaded again, within the call's time limit
                with deadline.native() as seconds:
                    self.handle = str(self._load(self.model_dir, self.options,
                                                 timeout=seconds)["handle"])
                continue
            if "error" in reply:
                raise describe.error_from_json(reply["error"])
            if reply.get("unknown"):
                break
            return out
        raise ModelNotReady(UNREACHABLE)

    def close(self) -> None:
        """Release this worker's hold; the runner closes the version once none holds it."""
        try:
            self.client.request({"op": "release", "handle": self.handle, "pid": os.getpid()},
                                timeout=5.0)
        except Exception:
            pass  # a runner that is gone holds nothing; a new one reaps dead holders


def runner_sockets() -> list[str]:
    """The sockets the master named for this worker's server (none when it runs no runner)."""
    value = os.environ.get(SOCKETS_VARIABLE, "")
    return [path for path in value.split(os.pathsep) if path]


def runner_lookup(lookup: Callable[[str], type[Predictor]], worker_index: int | None = None,
                  found: Mapping[str, Manifest] | None = None
                  ) -> tuple[Callable[[str], type[Predictor]], RunnerClient | None]:
    """*lookup*, with the plugins whose manifest says ``runner`` served by this worker's
    runner (its index picks one of the runners, one per GPU); *lookup* unchanged, and no
    client, where the server runs no runner."""
    sockets = runner_sockets()
    if not sockets:
        return lookup, None
    client = RunnerClient(sockets[(worker_index or 0) % len(sockets)])
    hosted = {name for name, manifest in (manifests() if found is None else found).items()
              if manifest.runner}
    proxies: dict[str, type[Predictor]] = {}

    def find(name: str) -> type[Predictor]:
        if name not in hosted:
            return lookup(name)
        if name not in proxies:
            proxies[name] = type(f"Runner_{name}", (RunnerPredictor,),
                                 {"plugin": name, "client": client})
        return proxies[name]

    return find, client


def runner_loader(lookup: Callable[[str], type[Predictor]]
                  ) -> Callable[[type[Predictor], ModelSpec, int, str], Predictor]:
    """The repository's loader where a runner is named: a model whose entry says
    ``"runner": false`` loads its version in this worker (*lookup* finds the framework's
    own class), any other as the class it was handed (a proxy loads in the runner)."""
    def load(cls: type[Predictor], spec: ModelSpec, version: int, path: str) -> Predictor:
        if issubclass(cls, RunnerPredictor) and not spec.runner:
            cls = lookup(cls.plugin)
        return cls.from_path(path, **spec.options)

    return load


def runner_readiness(client: RunnerClient, service: Any) -> Callable[[], bool]:
    """A readiness check: while this worker serves a version from the runner, the runner
    answers and has loaded again what it held (after a restart)."""
    def ready() -> bool:
        uses_runner = any(isinstance(loaded.predictor, RunnerPredictor)
                          for served in service.models() for loaded in served.versions.values())
        return not uses_runner or client.ready()

    return ready


def read_board() -> list[dict[str, Any]]:
    """Each runner of this server as the master last wrote it (socket, pid, ``up``,
    ``restarts``, ``gpu``); empty where the server runs none."""
    path = os.environ.get(BOARD_VARIABLE)
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file)
    except (OSError, ValueError):
        return []
    return found if isinstance(found, list) else []
