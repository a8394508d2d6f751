"""The settings of each part of the server, one frozen section each, with the reader that
checks its ``PREDICT_*`` keys: the process, model loading, gRPC, who may call, what the
server tells about itself, and the pages it serves beside the protocols."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from ..request.tokens import read_tokens
from ..errors import ConfigError
from ..observability.access_log import access_log_format
from ..observability.logs import log_format
from .payload_log import PayloadSettings
from .payload_log import read as read_payload_log
from ..tracing import tracing_value
from ..types import ModelSpec
from .values import bool_value, number_value, route_value


@dataclass(frozen=True)
class ProcessSettings:
    """The serving process: its threads, GPUs and place among the server's workers."""

    threads: int
    """Native threads each library may use in this process (BLAS, OpenMP, XGBoost, TF)."""
    gpus: tuple[int, ...] | None
    worker_index: int | None
    """This worker's index among its server's workers (set by gunicorn.conf.py)."""
    manage: bool
    """``init_app`` sizes thread pools, places the GPU and freezes the heap (the standalone
    server does that in gunicorn's hooks instead; an embedding app keeps its process)."""
    state_dir: str | None
    """Folder for state every worker of one server shares (grps online/offline, metrics)."""
    server_name: str


@dataclass(frozen=True)
class LoadingSettings:
    """How models load and are watched."""

    poll_seconds: float
    """How often the model directories and config file are re-read; 0 turns it off."""
    in_background: bool
    """Load models on a thread after ``init_app`` returns: liveness answers meanwhile,
    readiness once they are loaded (the standalone server's mode)."""
    shared_models: bool
    """Under gunicorn with flask-predict's settings: load the models whose plugin allows it
    once, in the master, for every worker (:mod:`flask_predict.models.sharing`)."""
    wait_seconds: float
    """With background loading: how long a request that needs a model waits for the first
    load before it is answered "not ready" (probes never wait)."""
    exit_on_error: bool
    """A model that does not load at start stops the server (:mod:`flask_predict.models.startup`);
    false serves the models that loaded."""
    runner: bool
    """Under gunicorn with flask-predict's settings: run the versions of the plugins that
    cannot be forked (TensorFlow, ONNX Runtime) in one runner process per machine or GPU
    (:mod:`flask_predict.runner`); false: each worker loads its own, as before."""


@dataclass(frozen=True)
class GrpcSettings:
    """The gRPC server every worker runs beside its REST routes."""

    port: int | None
    """The port every worker serves gRPC on; ``None``: no gRPC (see docs/protocols/grpc.md)."""
    host: str
    max_message_bytes: int
    """Largest gRPC request message; defaults to ``PREDICT_MAX_REQUEST_BYTES``."""
    threads: int
    grace_seconds: float


@dataclass(frozen=True)
class AuthSettings:
    """Who may call."""

    tokens: tuple[str, ...]
    """Tokens that prediction routes accept; empty: no authentication."""
    admin_tokens: tuple[str, ...]
    """Tokens that state-changing routes accept."""
    admin_loopback: bool
    """Whether state-changing routes are served to loopback clients without a token."""


@dataclass(frozen=True)
class ObservabilitySettings:
    """What the server tells about itself."""

    metrics: bool
    """Record request and model metrics (the grps monitor and the status page read them)."""
    access_log: str | None
    """``"text"`` or ``"json"`` access-log lines, or ``None`` for none."""
    access_log_probes: bool
    """Whether health probes (the ``health`` verb) get access lines too."""
    log_format: str
    """``"text"`` or ``"json"``: every line of the standalone server's log."""
    tracing: Any
    """``PREDICT_TRACING``: ``None`` (on when ``OTEL_TRACES_EXPORTER`` names an exporter),
    true, false, or the tracer provider to send spans to (see :mod:`flask_predict.tracing`)."""
    payload_log: PayloadSettings | None
    """What the payload log keeps, and where; ``None``: nothing."""


@dataclass(frozen=True)
class PageSettings:
    """The routes an app serves beside the protocols' (``None``: not served)."""

    metrics_path: str | None
    """Where Prometheus scrapes the metrics (embedded default: not served)."""
    status_path: str | None
    """The status page (embedded default: not served)."""
    openapi_route: str | None
    """The OpenAPI document."""


def read_process(values: Mapping[str, Any]) -> ProcessSettings:
    workers = number_value(values, "PREDICT_WORKERS", int, minimum=1)
    threads = values["PREDICT_THREADS"]
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // workers)
    else:
        threads = number_value(values, "PREDICT_THREADS", int, minimum=1)
    gpus = values["PREDICT_GPUS"]
    if gpus is not None:
        if isinstance(gpus, str):
            gpus = [g for g in gpus.split(",") if g.strip()]
        try:
            gpus = tuple(int(g) for g in gpus)
        except (TypeError, ValueError):
            raise ConfigError(f"PREDICT_GPUS must list GPU indices, got {values['PREDICT_GPUS']!r}")
    state_dir = values["PREDICT_STATE_DIR"]
    return ProcessSettings(
        threads=threads, gpus=gpus,
        worker_index=(None if values["PREDICT_WORKER_INDEX"] is None else
                      number_value(values, "PREDICT_WORKER_INDEX", int, minimum=0)),
        manage=bool_value(values, "PREDICT_MANAGE_PROCESS"),
        state_dir=str(state_dir) if state_dir else None,
        server_name=str(values["PREDICT_SERVER_NAME"]))


def read_loading(values: Mapping[str, Any]) -> LoadingSettings:
    return LoadingSettings(
        poll_seconds=number_value(values, "PREDICT_POLL_SECONDS", float, minimum=0),
        in_background=bool_value(values, "PREDICT_LOAD_IN_BACKGROUND"),
        shared_models=bool_value(values, "PREDICT_SHARED_MODELS"),
        wait_seconds=number_value(values, "PREDICT_LOAD_WAIT_SECONDS", float, minimum=0),
        exit_on_error=bool_value(values, "PREDICT_EXIT_ON_LOAD_ERROR"),
        runner=bool_value(values, "PREDICT_RUNNER"))


def read_grpc(values: Mapping[str, Any]) -> GrpcSettings:
    largest = ("PREDICT_MAX_REQUEST_BYTES" if values["PREDICT_GRPC_MAX_MESSAGE_BYTES"] is None
               else "PREDICT_GRPC_MAX_MESSAGE_BYTES")
    return GrpcSettings(
        port=(None if values["PREDICT_GRPC_PORT"] in (None, "") else
              number_value(values, "PREDICT_GRPC_PORT", int, minimum=0, maximum=65535)),
        host=str(values["PREDICT_GRPC_HOST"]),
        max_message_bytes=number_value(values, largest, int, minimum=1),
        threads=number_value(values, "PREDICT_GRPC_THREADS", int, minimum=1),
        grace_seconds=number_value(values, "PREDICT_GRPC_GRACE_SECONDS", float, minimum=0))


def read_auth(values: Mapping[str, Any]) -> AuthSettings:
    return AuthSettings(tokens=read_tokens(values, "PREDICT_AUTH_TOKENS"),
                        admin_tokens=read_tokens(values, "PREDICT_ADMIN_TOKENS"),
                        admin_loopback=bool_value(values, "PREDICT_ADMIN_LOOPBACK"))


def read_observability(values: Mapping[str, Any],
                       models: tuple[ModelSpec, ...]) -> ObservabilitySettings:
    access_log = access_log_format(values["PREDICT_ACCESS_LOG"])
    lines = log_format(values["PREDICT_LOG_FORMAT"], access_log)
    if access_log and lines == "json":  # one format in the server's one stream
        access_log = "json"
    return ObservabilitySettings(
        metrics=bool_value(values, "PREDICT_METRICS"), access_log=access_log,
        access_log_probes=bool_value(values, "PREDICT_ACCESS_LOG_PROBES"), log_format=lines,
        tracing=tracing_value(values["PREDICT_TRACING"]),
        payload_log=read_payload_log(values, models))


def read_pages(values: Mapping[str, Any]) -> PageSettings:
    return PageSettings(metrics_path=route_value(values, "PREDICT_METRICS_PATH"),
                        status_path=route_value(values, "PREDICT_STATUS_PATH"),
                        openapi_route=route_value(values, "PREDICT_OPENAPI_ROUTE"))
