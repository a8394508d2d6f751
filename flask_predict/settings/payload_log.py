"""The payload log's settings: the server-wide ``PREDICT_PAYLOAD_LOG*`` keys and each
model's ``payload_log`` entry, read into one :class:`PayloadSettings` (``None`` when no
model's requests are logged).

A sink is ``stdout``, a file (a path, or a ``file://`` URL: JSON lines, rotated by size) or
an ``http://``/``https://`` URL that receives each request and answer as CloudEvents, as
KServe's logger sends them. A model's entry is ``false`` (never logged), ``true`` (the
server-wide policy) or an object with any of ``sink``, ``mode`` and ``sampling``, each
defaulting to the server-wide key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..errors import ConfigError
from .values import number_value
from ..types import ModelSpec

DEFAULTS: dict[str, Any] = {
    "PREDICT_PAYLOAD_LOG": None,
    "PREDICT_PAYLOAD_LOG_MODE": "all",
    "PREDICT_PAYLOAD_LOG_SAMPLING": 1.0,
    "PREDICT_PAYLOAD_LOG_MAX_BODY_BYTES": 64 * 1024,
    "PREDICT_PAYLOAD_LOG_QUEUE": 1000,
    "PREDICT_PAYLOAD_LOG_FILE_MAX_BYTES": 100 * 1024 * 1024,
    "PREDICT_PAYLOAD_LOG_FILE_BACKUPS": 5,
    "PREDICT_PAYLOAD_LOG_TIMEOUT_SECONDS": 5.0,
    "PREDICT_PAYLOAD_LOG_SOURCE": None,
}
"""The payload log's keys with their defaults (``docs/configuration.md``)."""

MODES = ("all", "request", "response")
"""What is kept of a logged request: both sides, or one (KServe's logger modes)."""
MODEL_KEYS = frozenset({"sink", "mode", "sampling"})


@dataclass(frozen=True)
class Policy:
    """What is logged of one model's requests."""

    sink: str
    """``stdout``, ``file:<absolute path>`` or an ``http(s)://`` URL."""
    sampling: float
    """The fraction of requests logged (AI Platform's ``samplingPercentage``), 0 to 1."""
    mode: str


@dataclass(frozen=True)
class PayloadSettings:
    """The payload log of one app."""

    default: Policy | None
    """The server-wide policy (``None``: only models with their own are logged)."""
    models: Mapping[str, Policy | None] = field(default_factory=dict)
    """Models with an entry of their own (``None``: never logged)."""
    max_body_bytes: int = DEFAULTS["PREDICT_PAYLOAD_LOG_MAX_BODY_BYTES"]
    queue: int = DEFAULTS["PREDICT_PAYLOAD_LOG_QUEUE"]
    file_max_bytes: int = DEFAULTS["PREDICT_PAYLOAD_LOG_FILE_MAX_BYTES"]
    file_backups: int = DEFAULTS["PREDICT_PAYLOAD_LOG_FILE_BACKUPS"]
    timeout_seconds: float = DEFAULTS["PREDICT_PAYLOAD_LOG_TIMEOUT_SECONDS"]
    source: str | None = None
    """The CloudEvents ``source`` (default: ``urn:flask-predict:<host name>``)."""

    def policy(self, model: str) -> Policy | None:
        """The policy of *model* ("" : a request that named no served model)."""
        return self.models[model] if model in self.models else self.default

    def sinks(self) -> set[str]:
        """Every sink some policy names."""
        policies = [self.default, *self.models.values()]
        return {policy.sink for policy in policies if policy is not None}

    def top_rate(self) -> float:
        """The highest sampling rate of any policy."""
        policies = [self.default, *self.models.values()]
        return max((policy.sampling for policy in policies if policy is not None), default=0.0)


def sink_value(value: Any, where: str) -> str | None:
    """A sink as :attr:`Policy.sink` holds it; ``None`` for off."""
    if value in (None, False, "", "off", "false", "none"):
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be 'stdout', a file path or an http(s) URL, "
                          f"got {value!r}")
    if value in ("stdout", "-"):
        return "stdout"
    if value.startswith(("http://", "https://")):
        parts = urlsplit(value)
        if not parts.hostname or parts.username or parts.password:
            raise ConfigError(f"{where}: {value!r} needs a host name and no user or password")
        return value
    path = value[len("file://"):] if value.startswith("file://") else value
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(os.path.dirname(path)):
        raise ConfigError(f"{where}: the folder of {path!r} does not exist")
    return "file:" + path


def sampling_value(value: Any, where: str) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = -1.0
    if isinstance(value, bool) or not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{where} must be a fraction from 0 to 1, got {value!r}")
    return rate


def mode_value(value: Any, where: str) -> str:
    if value not in MODES:
        raise ConfigError(f"{where} must be one of {list(MODES)}, got {value!r}")
    return str(value)


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> PayloadSettings | None:
    """The payload log's settings from the ``PREDICT_PAYLOAD_LOG*`` *values* and the
    models' entries; ``None`` when nothing is logged."""
    mode = mode_value(values["PREDICT_PAYLOAD_LOG_MODE"], "PREDICT_PAYLOAD_LOG_MODE")
    sampling = sampling_value(values["PREDICT_PAYLOAD_LOG_SAMPLING"],
                              "PREDICT_PAYLOAD_LOG_SAMPLING")
    sink = sink_value(values["PREDICT_PAYLOAD_LOG"], "PREDICT_PAYLOAD_LOG")
    default = Policy(sink, sampling, mode) if sink is not None else None
    own = {spec.name: _model_policy(spec, default, sampling, mode) for spec in models
           if spec.payload_log is not None}
    if default is None and not any(own.values()):
        return None
    source = values["PREDICT_PAYLOAD_LOG_SOURCE"]
    return PayloadSettings(
        default, own,
        max_body_bytes=number_value(values, "PREDICT_PAYLOAD_LOG_MAX_BODY_BYTES", int,
                                    minimum=0),
        queue=number_value(values, "PREDICT_PAYLOAD_LOG_QUEUE", int, minimum=1),
        file_max_bytes=number_value(values, "PREDICT_PAYLOAD_LOG_FILE_MAX_BYTES", int,
                                    minimum=0),
        file_backups=number_value(values, "PREDICT_PAYLOAD_LOG_FILE_BACKUPS", int, minimum=1),
        timeout_seconds=number_value(values, "PREDICT_PAYLOAD_LOG_TIMEOUT_SECONDS", float,
                                     minimum=0.001),
        source=str(source) if source else None)


def _model_policy(spec: ModelSpec, default: Policy | None, sampling: float,
                  mode: str) -> Policy | None:
    where = f"model {spec.name!r}: payload_log"
    entry = spec.payload_log
    if entry is False:
        return None
    if entry is True:
        if default is None:
            raise ConfigError(f"{where} is true but PREDICT_PAYLOAD_LOG names no sink")
        return default
    if not isinstance(entry, Mapping) or set(entry) - MODEL_KEYS:
        raise ConfigError(f"{where} must be true, false or an object with "
                          f"{sorted(MODEL_KEYS)}, got {entry!r}")
    sink = sink_value(entry["sink"], f"{where}.sink") if "sink" in entry else \
        (default.sink if default is not None else None)
    if sink is None:
        raise ConfigError(f"{where} names no sink, and neither does PREDICT_PAYLOAD_LOG")
    return Policy(sink,
                  sampling_value(entry.get("sampling", sampling), f"{where}.sampling"),
                  mode_value(entry.get("mode", mode), f"{where}.mode"))
