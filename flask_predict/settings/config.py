"""Settings: the ``PREDICT_*`` Flask config keys, read once by ``init_app`` and validated.

Model configuration comes from ``PREDICT_MODELS`` (a mapping), ``PREDICT_MODEL_CONFIG_FILE``
(a JSON file of the same shape, or TF Serving's text-format ``model_config_list``), or the
TF Serving environment variables ``MODEL_NAME`` and ``MODEL_BASE_PATH`` (see
:func:`flask_predict.settings.environ.config_from_environ`). Each part's keys are read into
its own section (:mod:`.parts`); each protocol's, by the protocol (its ``Section``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..request.descriptor import Section
from ..errors import ConfigError, closest, did_you_mean
from .payload_log import DEFAULTS as PAYLOAD_LOG_DEFAULTS
from .batching import BATCHING_DEFAULTS, BatchingSettings, read_batching
from .lazy import DEFAULTS as LAZY_DEFAULTS
from .lazy import LazySettings
from .lazy import read as read_lazy
from ..storage import CACHE_VARIABLE, cache_root
from ..types import Limits, ModelSpec
from .model_config import environment_models, with_config_file
from .parts import (AuthSettings, GrpcSettings, LoadingSettings, ObservabilitySettings,
                    PageSettings, ProcessSettings, read_auth, read_grpc, read_loading,
                    read_observability, read_pages, read_process)
from .values import number_value, str_list, timeout_value


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
    "PREDICT_RUNNER": True,
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
    **LAZY_DEFAULTS,
    **BATCHING_DEFAULTS,
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
    """Validated settings of one app: what every part shares, then one section per part."""

    models: tuple[ModelSpec, ...]
    protocols: tuple[str, ...]
    url_prefix: str
    max_request_bytes: int
    limits: Limits
    timeout_seconds: float | None
    """Longest a predictor call may run, for models that set no ``timeout_seconds``."""
    model_config_file: str | None
    process: ProcessSettings
    loading: LoadingSettings
    grpc: GrpcSettings
    auth: AuthSettings
    observability: ObservabilitySettings
    pages: PageSettings
    sections: Mapping[str, Any] = field(default_factory=dict)
    """Each protocol's own settings, by protocol name, as its ``Section`` read them."""
    batching: BatchingSettings = field(default_factory=BatchingSettings)
    """``PREDICT_BATCHING*``: what the runner batches (:mod:`flask_predict.runner`)."""
    environment_models: tuple[ModelSpec, ...] = ()
    """The models of ``PREDICT_MODELS`` (fixed while serving), the first of :attr:`models`;
    the watcher reads the config file's again on every poll."""
    lazy: LazySettings | None = None
    """``PREDICT_LAZY_*``: the lazy tier's root and cap (``None``: no lazy tier)."""

    def model(self, name: str) -> ModelSpec | None:
        return next((spec for spec in self.models if spec.name == name), None)


def unknown_setting(key: str, known: Iterable[str]) -> str:
    """One line for the unknown setting *key*: the known one it resembles, compared without
    the ``PREDICT_`` every name shares, else where every setting is listed."""
    close = closest(key.removeprefix(PREFIX), [name.removeprefix(PREFIX) for name in known])
    hint = f"; did you mean {PREFIX + close!r}?" if close else SETTINGS_LISTED
    return f"unknown setting {key!r}{hint}"


def settings_from(config: Mapping[str, Any], protocols: Mapping[str, Section | None]) -> Settings:
    """Validate the ``PREDICT_*`` keys of *config* for an app that may serve *protocols* (each
    registered protocol's name and settings section); raise :class:`ConfigError` naming the
    key. :func:`flask_predict.settings.app.read_settings` hands it the protocol table's."""
    protocol_sections = {name: section for name, section in protocols.items()
                         if section is not None}
    defaults = {**DEFAULTS, **{key: value for section in protocol_sections.values()
                               for key, value in section.defaults.items()}}
    unknown = sorted(k for k in config if k.startswith(PREFIX) and k not in defaults)
    if unknown:
        raise ConfigError("; ".join(unknown_setting(key, defaults) for key in unknown))
    values = {**defaults, **{k: v for k, v in config.items() if k in defaults}}

    known = sorted(protocols)  # every registered protocol (the default)
    served = known if values["PREDICT_PROTOCOLS"] is None else str_list(values,
                                                                         "PREDICT_PROTOCOLS")
    for name in served:
        if name not in protocols:
            raise ConfigError(f"PREDICT_PROTOCOLS: unknown protocol {name!r}"
                              f"{did_you_mean(name, known)} (choose from {known})")
    prefix = str(values["PREDICT_URL_PREFIX"] or "").rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise ConfigError(f"PREDICT_URL_PREFIX must start with '/', got {prefix!r}")
    process = read_process(values)
    check_storage_cache(values["PREDICT_STORAGE_CACHE"])
    config_file = values["PREDICT_MODEL_CONFIG_FILE"]
    fixed = environment_models(values["PREDICT_MODELS"])
    models = with_config_file(fixed, config_file)
    return Settings(
        models=models,
        protocols=tuple(served),
        url_prefix=prefix,
        max_request_bytes=number_value(values, "PREDICT_MAX_REQUEST_BYTES", int, minimum=1),
        limits=Limits(
            max_inflate_ratio=number_value(values, "PREDICT_MAX_INFLATE_RATIO", int, minimum=1),
            max_json_depth=number_value(values, "PREDICT_MAX_JSON_DEPTH", int, minimum=2,
                                        maximum=MAX_JSON_DEPTH_CEILING),
            max_instances=number_value(values, "PREDICT_MAX_INSTANCES", int, minimum=1),
            max_tensor_elements=number_value(values, "PREDICT_MAX_TENSOR_ELEMENTS", int,
                                             minimum=1),
        ),
        timeout_seconds=timeout_value(values["PREDICT_TIMEOUT_SECONDS"], "PREDICT_TIMEOUT_SECONDS"),
        model_config_file=str(config_file) if config_file else None,
        process=process,
        loading=read_loading(values),
        grpc=read_grpc(values),
        auth=read_auth(values),
        observability=read_observability(values, models),
        pages=read_pages(values),
        sections={name: section.read(values, models)
                  for name, section in protocol_sections.items()},
        batching=read_batching(values),
        environment_models=fixed,
        lazy=read_lazy(values),
    )


def check_storage_cache(folder: Any) -> None:
    """``PREDICT_STORAGE_CACHE`` is every process's, so it is read from the environment
    (:func:`flask_predict.storage.cache_root`); a config value must agree with it."""
    if folder and os.path.abspath(str(folder)) != os.path.abspath(cache_root()):
        raise ConfigError(f"PREDICT_STORAGE_CACHE is {folder!r}: set it in the environment as "
                          f"{CACHE_VARIABLE}, which every process of the server reads")
