"""Settings: the ``PREDICT_*`` Flask config keys, read once by ``init_app`` and validated.

Model configuration comes from ``PREDICT_MODELS`` (a mapping), ``PREDICT_MODEL_CONFIG_FILE``
(a JSON file of the same shape, or TF Serving's text-format ``model_config_list``), or the
TF Serving environment variables ``MODEL_NAME`` and ``MODEL_BASE_PATH`` (see
:func:`config_from_environ`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..core.tokens import read_tokens
from ..errors import ConfigError, closest, did_you_mean
from ..observability.access_log import access_log_format
from ..observability.logs import log_format
from ..payload_log import DEFAULTS as PAYLOAD_LOG_DEFAULTS
from ..payload_log import PayloadSettings
from ..payload_log import read_settings as read_payload_log
from ..protocols import REGISTRY, Section, descriptors
from ..storage import CACHE_VARIABLE, cache_root
from ..tracing import tracing_value
from ..types import Limits, ModelSpec
from .model_config import load_models, number_value, timeout_value
from .vertex_storage import VARIABLE as STORAGE_VARIABLE
from .vertex_storage import storage_base_path


PREFIX = "PREDICT_"
SETTINGS_LISTED = " (every setting: the configuration reference, docs/configuration.md)"
"""Where an unknown setting that resembles none is pointed: one line, not the whole list."""

DEFAULTS: dict[str, Any] = {
    "PREDICT_MODELS": None,
    "PREDICT_MODEL_CONFIG_FILE": None,
    "PREDICT_PROTOCOLS": None,
    "PREDICT_URL_PREFIX": "",
    "PREDICT_MAX_REQUEST_BYTES": 64 * 1024 * 1024,
    "PREDICT_MAX_INFLATE_RATIO": 200,
    "PREDICT_MAX_JSON_DEPTH": 64,
    "PREDICT_MAX_INSTANCES": 100_000,
    "PREDICT_MAX_TENSOR_ELEMENTS": 2**25,
    "PREDICT_WORKERS": 1,
    "PREDICT_THREADS": None,
    "PREDICT_POLL_SECONDS": 2.0,
    "PREDICT_TIMEOUT_SECONDS": None,
    "PREDICT_STATE_DIR": None,
    "PREDICT_STORAGE_CACHE": None,
    "PREDICT_SERVER_NAME": "flask-predict",
    "PREDICT_GPUS": None,
    "PREDICT_WORKER_INDEX": None,
    "PREDICT_MANAGE_PROCESS": False,
    "PREDICT_LOAD_IN_BACKGROUND": False,
    "PREDICT_LOAD_WAIT_SECONDS": 30.0,
    "PREDICT_SHARED_MODELS": True,
    "PREDICT_EXIT_ON_LOAD_ERROR": True,
    "PREDICT_GRPC_PORT": None,
    "PREDICT_GRPC_HOST": "0.0.0.0",
    "PREDICT_GRPC_MAX_MESSAGE_BYTES": None,
    "PREDICT_GRPC_THREADS": 4,
    "PREDICT_GRPC_GRACE_SECONDS": 5.0,
    "PREDICT_METRICS": True,
    "PREDICT_METRICS_PATH": None,
    "PREDICT_ACCESS_LOG": "text",
    "PREDICT_ACCESS_LOG_PROBES": False,
    "PREDICT_LOG_FORMAT": None,
    "PREDICT_STATUS_PATH": None,
    "PREDICT_AUTH_TOKENS": None,
    "PREDICT_AUTH_TOKENS_FILE": None,
    "PREDICT_ADMIN_TOKENS": None,
    "PREDICT_ADMIN_TOKENS_FILE": None,
    "PREDICT_ADMIN_LOOPBACK": True,
    "PREDICT_OPENAPI_ROUTE": None,
    "PREDICT_TRACING": None,
    **PAYLOAD_LOG_DEFAULTS,
}
"""Every core key with its default (each protocol adds its own section's keys).
``docs/configuration.md`` has one entry per key."""

STANDALONE_DEFAULTS: dict[str, Any] = {
    "PREDICT_LOAD_IN_BACKGROUND": True,
    "PREDICT_OPENAPI_ROUTE": "/openapi.json",
    "PREDICT_METRICS_PATH": "/metrics",
    "PREDICT_STATUS_PATH": "/",
}
"""Defaults of the standalone server (``flask_predict.wsgi``), over :data:`DEFAULTS`: what
an app that embeds the extension opts into (background loading, the API document,
``/metrics`` and the status page)."""


MAX_JSON_DEPTH_CEILING = 512
"""``PREDICT_MAX_JSON_DEPTH`` may not go past this: the parsers and numpy stop sooner."""




@dataclass(frozen=True)
class Settings:
    """Validated settings of one app."""

    models: tuple[ModelSpec, ...]
    protocols: tuple[str, ...]
    url_prefix: str
    max_request_bytes: int
    limits: Limits
    threads: int
    """Native threads each library may use in this process (BLAS, OpenMP, XGBoost, TF)."""
    poll_seconds: float
    """How often the model directories and config file are re-read; 0 turns it off."""
    timeout_seconds: float | None
    """Longest a predictor call may run, for models that set no ``timeout_seconds``."""
    model_config_file: str | None
    state_dir: str | None
    """Folder for state every worker of one server shares (grps online/offline, metrics)."""
    server_name: str
    gpus: tuple[int, ...] | None
    worker_index: int | None
    """This worker's index among its server's workers (set by gunicorn.conf.py)."""
    manage_process: bool
    """``init_app`` sizes thread pools, places the GPU and freezes the heap (the standalone
    server does that in gunicorn's hooks instead; an embedding app keeps its process)."""
    load_in_background: bool
    """Load models on a thread after ``init_app`` returns: liveness answers meanwhile,
    readiness once they are loaded (the standalone server's mode)."""
    shared_models: bool
    """Under gunicorn with flask-predict's settings: load the models whose plugin allows it
    once, in the master, for every worker (:mod:`flask_predict.models.sharing`)."""
    load_wait_seconds: float
    """With background loading: how long a request that needs a model waits for the first
    load before it is answered "not ready" (probes never wait)."""
    exit_on_load_error: bool
    """A model that does not load at start stops the server (:mod:`.startup`); false serves
    the models that loaded."""
    grpc_port: int | None
    """The port every worker serves gRPC on; ``None``: no gRPC (see docs/protocols/grpc.md)."""
    grpc_host: str
    grpc_max_message_bytes: int
    """Largest gRPC request message; defaults to ``max_request_bytes``."""
    grpc_threads: int
    grpc_grace_seconds: float
    metrics: bool
    """Record request and model metrics (the grps monitor and the status page read them)."""
    metrics_path: str | None
    """Where Prometheus scrapes them; ``None``: not served (embedded default)."""
    access_log: str | None
    """``"text"`` or ``"json"`` access-log lines, or ``None`` for none."""
    access_log_probes: bool
    """Whether health probes (the ``health`` verb) get access lines too."""
    log_format: str
    """``"text"`` or ``"json"``: every line of the standalone server's log."""
    status_path: str | None
    """Where the status page is served; ``None``: not served (embedded default)."""
    auth_tokens: tuple[str, ...]
    """Tokens that prediction routes accept; empty: no authentication."""
    admin_tokens: tuple[str, ...]
    """Tokens that state-changing routes accept."""
    admin_loopback: bool
    """Whether state-changing routes are served to loopback clients without a token."""
    openapi_route: str | None
    """Where the OpenAPI document is served (``None``: not served)."""
    tracing: Any = None
    """``PREDICT_TRACING``: ``None`` (on when ``OTEL_TRACES_EXPORTER`` names an exporter),
    true, false, or the tracer provider to send spans to (see :mod:`.tracing`)."""
    payload_log: PayloadSettings | None = None
    """What the payload log keeps, and where; ``None``: nothing."""
    sections: Mapping[str, Any] = field(default_factory=dict)
    """Each protocol's own settings, by protocol name, as its :class:`Section` read them."""

    def model(self, name: str) -> ModelSpec | None:
        return next((spec for spec in self.models if spec.name == name), None)


def unknown_setting(key: str, known: Iterable[str]) -> str:
    """One line for the unknown setting *key*: the known one it resembles, compared without
    the ``PREDICT_`` every name shares, else where every setting is listed."""
    close = closest(key.removeprefix(PREFIX), [name.removeprefix(PREFIX) for name in known])
    hint = f"; did you mean {PREFIX + close!r}?" if close else SETTINGS_LISTED
    return f"unknown setting {key!r}{hint}"


def read_settings(config: Mapping[str, Any]) -> Settings:
    """Validate the ``PREDICT_*`` keys of *config*; raise :class:`ConfigError` naming the key."""
    sections = {protocol.name: protocol.settings for protocol in descriptors()
                if protocol.settings is not None}
    defaults = {**DEFAULTS, **{key: value for section in sections.values()
                               for key, value in section.defaults.items()}}
    unknown = sorted(k for k in config if k.startswith("PREDICT_") and k not in defaults)
    if unknown:
        raise ConfigError("; ".join(unknown_setting(key, defaults) for key in unknown))
    values = {**defaults, **{k: v for k, v in config.items() if k in defaults}}

    known = sorted(REGISTRY)  # every registered protocol (the default)
    protocols = known if values["PREDICT_PROTOCOLS"] is None else str_list(values,
                                                                            "PREDICT_PROTOCOLS")
    for name in protocols:
        if name not in REGISTRY:
            raise ConfigError(f"PREDICT_PROTOCOLS: unknown protocol {name!r}"
                              f"{did_you_mean(name, known)} (choose from {known})")
    prefix = str(values["PREDICT_URL_PREFIX"] or "").rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise ConfigError(f"PREDICT_URL_PREFIX must start with '/', got {prefix!r}")
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

    check_storage_cache(values["PREDICT_STORAGE_CACHE"])
    config_file = values["PREDICT_MODEL_CONFIG_FILE"]
    models = load_models(values["PREDICT_MODELS"], config_file)
    access_log = access_log_format(values["PREDICT_ACCESS_LOG"])
    lines = log_format(values["PREDICT_LOG_FORMAT"], access_log)
    if access_log and lines == "json":  # one format in the server's one stream
        access_log = "json"
    return Settings(
        models=models,
        protocols=tuple(protocols),
        url_prefix=prefix,
        max_request_bytes=number_value(values, "PREDICT_MAX_REQUEST_BYTES", int, minimum=1),
        limits=Limits(
            max_inflate_ratio=number_value(values, "PREDICT_MAX_INFLATE_RATIO", int, minimum=1),
            max_json_depth=number_value(values, "PREDICT_MAX_JSON_DEPTH", int, minimum=2,
                                   maximum=MAX_JSON_DEPTH_CEILING),
            max_instances=number_value(values, "PREDICT_MAX_INSTANCES", int, minimum=1),
            max_tensor_elements=number_value(values, "PREDICT_MAX_TENSOR_ELEMENTS", int, minimum=1),
        ),
        threads=threads,
        poll_seconds=number_value(values, "PREDICT_POLL_SECONDS", float, minimum=0),
        timeout_seconds=timeout_value(values["PREDICT_TIMEOUT_SECONDS"], "PREDICT_TIMEOUT_SECONDS"),
        model_config_file=str(config_file) if config_file else None,
        state_dir=str(values["PREDICT_STATE_DIR"]) if values["PREDICT_STATE_DIR"] else None,
        server_name=str(values["PREDICT_SERVER_NAME"]),
        gpus=gpus,
        worker_index=(None if values["PREDICT_WORKER_INDEX"] is None else
                      number_value(values, "PREDICT_WORKER_INDEX", int, minimum=0)),
        manage_process=bool_value(values, "PREDICT_MANAGE_PROCESS"),
        load_in_background=bool_value(values, "PREDICT_LOAD_IN_BACKGROUND"),
        shared_models=bool_value(values, "PREDICT_SHARED_MODELS"),
        load_wait_seconds=number_value(values, "PREDICT_LOAD_WAIT_SECONDS", float, minimum=0),
        exit_on_load_error=bool_value(values, "PREDICT_EXIT_ON_LOAD_ERROR"),
        grpc_port=(None if values["PREDICT_GRPC_PORT"] in (None, "") else
                   number_value(values, "PREDICT_GRPC_PORT", int, minimum=0, maximum=65535)),
        grpc_host=str(values["PREDICT_GRPC_HOST"]),
        grpc_max_message_bytes=(
            number_value(values, "PREDICT_MAX_REQUEST_BYTES", int, minimum=1)
            if values["PREDICT_GRPC_MAX_MESSAGE_BYTES"] is None else
            number_value(values, "PREDICT_GRPC_MAX_MESSAGE_BYTES", int, minimum=1)),
        grpc_threads=number_value(values, "PREDICT_GRPC_THREADS", int, minimum=1),
        grpc_grace_seconds=number_value(values, "PREDICT_GRPC_GRACE_SECONDS", float, minimum=0),
        metrics=bool_value(values, "PREDICT_METRICS"),
        metrics_path=route_value(values, "PREDICT_METRICS_PATH"),
        access_log=access_log,
        access_log_probes=bool_value(values, "PREDICT_ACCESS_LOG_PROBES"),
        log_format=lines,
        status_path=route_value(values, "PREDICT_STATUS_PATH"),
        auth_tokens=read_tokens(values, "PREDICT_AUTH_TOKENS"),
        admin_tokens=read_tokens(values, "PREDICT_ADMIN_TOKENS"),
        admin_loopback=bool_value(values, "PREDICT_ADMIN_LOOPBACK"),
        openapi_route=route_value(values, "PREDICT_OPENAPI_ROUTE"),
        tracing=tracing_value(values["PREDICT_TRACING"]),
        payload_log=read_payload_log(values, models),
        sections={name: section.read(values, models) for name, section in sections.items()},
    )


def config_from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """Config keys from TF Serving's and Vertex AI's container environment.

    As in TF Serving's container, the model lives in ``$MODEL_BASE_PATH/$MODEL_NAME``
    (``MODEL_BASE_PATH`` defaults to ``/models``). ``MODEL_CONFIG_FILE`` names a config file.
    A protocol's section may read more variables (Vertex AI's ``AIP_PREDICT_ROUTE`` and
    ``AIP_HEALTH_ROUTE`` add its routes: ``Section.environ``), and ``AIP_STORAGE_URI`` (a local folder or a ``gs://``/``s3://`` URI; see :mod:`flask_predict.settings.vertex_storage`) is the model
    ``$MODEL_NAME`` (default ``model``) unless a model config is set.
    """
    config: dict[str, Any] = {}
    if environ.get("MODEL_NAME"):
        name = environ["MODEL_NAME"]
        base = environ.get("MODEL_BASE_PATH", "/models")
        config["PREDICT_MODELS"] = {name: {"base_path": os.path.join(base, name)}}
    if environ.get("MODEL_CONFIG_FILE"):
        config["PREDICT_MODEL_CONFIG_FILE"] = environ["MODEL_CONFIG_FILE"]
    for section in _sections():
        for variable, key in section.environ.items():
            if environ.get(variable):
                config[key] = environ[variable]
    storage = environ.get(STORAGE_VARIABLE)
    if storage and not any(environ.get(name) for name in MODEL_SOURCES):
        name = environ.get("MODEL_NAME") or "model"
        config["PREDICT_MODELS"] = {name: {"base_path": storage_base_path(storage)}}
    return config


MODEL_SOURCES = ("FLASK_PREDICT_MODELS", "FLASK_PREDICT_MODEL_CONFIG_FILE", "MODEL_CONFIG_FILE")
"""Settings that name the models themselves: with one of them, ``AIP_STORAGE_URI`` is unused."""


def _sections() -> list[Section]:
    return [protocol.settings for protocol in descriptors() if protocol.settings is not None]


def check_storage_cache(folder: Any) -> None:
    """``PREDICT_STORAGE_CACHE`` is every process's, so it is read from the environment
    (:func:`flask_predict.storage.cache_root`); a config value must agree with it."""
    if folder and os.path.abspath(str(folder)) != os.path.abspath(cache_root()):
        raise ConfigError(f"PREDICT_STORAGE_CACHE is {folder!r}: set it in the environment as "
                          f"{CACHE_VARIABLE}, which every process of the server reads")


def route_value(values: Mapping[str, Any], key: str) -> str | None:
    route = values[key]
    if not route:
        return None
    if not isinstance(route, str) or not route.startswith("/"):
        raise ConfigError(f"{key} must be a path starting with '/', got {route!r}")
    return route


def str_list(values: Mapping[str, Any], key: str) -> list[str]:
    value = values[key]
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of names, got {value!r}")
    return list(value)


def choice_value(values: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = values[key]
    if value not in choices:
        raise ConfigError(f"{key} must be one of {list(choices)}, got {value!r}")
    return str(value)


def bool_value(values: Mapping[str, Any], key: str) -> bool:
    value = values[key]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.lower() in ("true", "1", "yes")
    raise ConfigError(f"{key} must be true or false, got {value!r}")
