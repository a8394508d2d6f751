"""Batching parameters as TF Serving reads them: ``--batching_parameters_file`` (a text-format
``BatchingParameters``), a version folder's ``batching_params.pbtxt``
(``--enable_per_model_batching_parameters``) and a model's ``batching`` entry in our own
model config; TF Serving's defaults and checks, read without protobuf.

A parameters file, as TF Serving's batching guide writes one (each number is a protobuf
wrapper, hence the braces)::

    max_batch_size { value: 128 }
    batch_timeout_micros { value: 1000 }
    max_enqueued_batches { value: 100 }
    num_batch_threads { value: 8 }
    allowed_batch_sizes: 32
    allowed_batch_sizes: 128
    pad_variable_length_inputs: true
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from .tfserving_config import parse_text
from .values import bool_value

PER_MODEL_FILE = "batching_params.pbtxt"
"""The file in a version folder that ``--enable_per_model_batching_parameters`` reads."""
WRAPPED = ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches",
           "num_batch_threads", "max_execution_batch_size")
"""The fields TF Serving declares as ``google.protobuf.Int64Value``: ``name { value: N }``."""
FLAGS = ("pad_variable_length_inputs", "enable_large_batch_splitting")
IGNORED = ("thread_pool_name",)
"""Fields read and without effect here (the batch threads' name)."""


def _cores() -> int:
    return os.cpu_count() or 1


@dataclass(frozen=True)
class BatchingParameters:
    """One queue's parameters, with TF Serving's defaults (``SharedBatchScheduler``'s)."""

    max_batch_size: int = 1000
    """Rows in one batch (with splitting: the largest request taken)."""
    batch_timeout_micros: int = 0
    """How long a batch that is not full waits for more, from its first request."""
    max_enqueued_batches: int = 10
    """Batches a queue holds, the open one counted; past it a request is unavailable."""
    num_batch_threads: int = field(default_factory=_cores)
    """Batches executed at once (TF Serving's default: the machine's cores)."""
    allowed_batch_sizes: tuple[int, ...] = ()
    """A batch is padded up to the first of these that holds it."""
    pad_variable_length_inputs: bool = False
    """Pad inputs whose other dimensions differ between requests up to the largest."""
    enable_large_batch_splitting: bool = False
    """Split a request larger than a batch across batches instead of refusing it."""
    max_execution_batch_size: int | None = None
    """With splitting: rows in one batch (default: ``max_batch_size``)."""

    @property
    def batch_rows(self) -> int:
        """Rows in one executed batch."""
        if self.enable_large_batch_splitting and self.max_execution_batch_size:
            return self.max_execution_batch_size
        return self.max_batch_size


def check(parameters: BatchingParameters) -> BatchingParameters:
    """TF Serving's checks of a set of parameters, in its words; *parameters* when they hold."""
    for name, least in (("max_batch_size", 1), ("batch_timeout_micros", 0),
                        ("max_enqueued_batches", 0), ("num_batch_threads", 1)):
        value = getattr(parameters, name)
        if value < least:
            kind = "positive" if least else "non-negative"
            raise ConfigError(f"{name} must be {kind}; was {value}")
    if parameters.max_execution_batch_size is not None and (
            parameters.max_execution_batch_size < 1):
        raise ConfigError("max_execution_batch_size must be positive; was "
                          f"{parameters.max_execution_batch_size}")
    sizes = parameters.allowed_batch_sizes
    if sizes:
        if any(size < 1 for size in sizes):
            raise ConfigError(f"allowed_batch_sizes entries must be positive; got {list(sizes)}")
        if any(later <= earlier for earlier, later in zip(sizes, sizes[1:])):
            raise ConfigError("allowed_batch_sizes entries must be monotonically increasing")
        if sizes[-1] != parameters.batch_rows:
            what = ("max_execution_batch_size" if parameters.batch_rows !=
                    parameters.max_batch_size else "max_batch_size")
            raise ConfigError(f"Last entry in allowed_batch_sizes must match {what}; last "
                              f"entry was {sizes[-1]}; expected {parameters.batch_rows}")
    return parameters


def parse_batching_parameters(text: str) -> BatchingParameters:
    """A text-format ``BatchingParameters``; :class:`ConfigError` saying what does not parse
    (the fields TF Serving knows, its wrapper syntax), then TF Serving's checks."""
    values: dict[str, Any] = {}
    sizes: list[int] = []
    for name, value in parse_text(text):
        if name in WRAPPED:
            values[name] = _wrapped_int(name, value)
        elif name == "allowed_batch_sizes":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"allowed_batch_sizes must be integers, got {value!r}")
            sizes.append(value)
        elif name in FLAGS:
            values[name] = _flag(name, value)
        elif name not in IGNORED:
            raise ConfigError(f"unknown or unsupported field {name!r} (known: "
                              f"{', '.join(WRAPPED + ('allowed_batch_sizes',) + FLAGS)})")
    return check(BatchingParameters(allowed_batch_sizes=tuple(sizes), **values))


def _wrapped_int(name: str, value: Any) -> int:
    if not isinstance(value, list):
        raise ConfigError(f"{name} is a wrapper message: write {name} {{ value: {value} }}")
    numbers = [number for key, number in value if key == "value"]
    if len(numbers) != len(value) or not all(isinstance(n, int) for n in numbers):
        raise ConfigError(f"{name} {{ ... }} takes one integer field, value")
    return int(numbers[-1]) if numbers else 0  # an empty wrapper is 0, as in protobuf


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value in ("true", "True", "t", "false", "False", "f"):
        return value in ("true", "True", "t")
    raise ConfigError(f"{name} must be true or false, got {value!r}")


def read_batching_parameters_file(path: str | os.PathLike[str]) -> BatchingParameters:
    """``--batching_parameters_file``: TF Serving's ``Invalid protobuf file: '<path>'`` for a
    file that does not parse, followed by why."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read batching parameters file {str(path)!r}: {exc}")
    try:
        return parse_batching_parameters(text)
    except ConfigError as exc:
        raise ConfigError(f"Invalid protobuf file: '{path}': "
                          f"{exc.message.removeprefix('model config text: ')}") from exc


def from_mapping(entry: Mapping[str, Any], where: str) -> BatchingParameters:
    """A model's ``batching`` object in our JSON model config: the same fields with plain
    values (``{"value": N}`` also taken for a wrapped number)."""
    known = {f.name for f in fields(BatchingParameters)}
    unknown = sorted(set(entry) - known - set(IGNORED))
    if unknown:
        raise ConfigError(f"{where}: unknown batching field(s) {unknown} (known: "
                          f"{sorted(known)})")
    values: dict[str, Any] = {}
    try:
        for name in set(entry) & known:
            value = entry[name]
            if isinstance(value, Mapping) and set(value) == {"value"}:
                value = value["value"]
            if name in FLAGS:
                values[name] = bool_value({name: value}, name)
            elif name == "allowed_batch_sizes":
                values[name] = tuple(_integer(name, size) for size in value)
            else:
                values[name] = _integer(name, value)
        return check(BatchingParameters(**values))
    except (ConfigError, TypeError) as exc:
        why = exc.message if isinstance(exc, ConfigError) else str(exc)
        raise ConfigError(f"{where}: batching: {why}") from exc


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return value


def model_batching(value: Any, where: str) -> BatchingParameters | bool | None:
    """A model entry's ``batching``: parameters of its own, true (the server's), false (never
    batched), or ``None`` (not set: the server's rule)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return from_mapping(value, where)
    raise ConfigError(f"{where}: batching must be true, false or an object of batching "
                      f"parameters, got {value!r}")


@dataclass(frozen=True)
class BatchingSettings:
    """``PREDICT_BATCHING*``: whether the runner batches, and with which parameters."""

    enabled: bool = False
    """``--enable_batching``."""
    parameters: BatchingParameters = field(default_factory=BatchingParameters)
    """The server's parameters: ``--batching_parameters_file``'s, else TF Serving's defaults."""
    per_model: bool = False
    """``--enable_per_model_batching_parameters``: each version folder's
    ``batching_params.pbtxt`` (a version without one is not batched, as in TF Serving)."""

    def for_version(self, model: BatchingParameters | bool | None,
                    version_dir: str | os.PathLike[str]) -> BatchingParameters | None:
        """What one version batches with (``None``: it does not): the model's own
        ``batching`` entry first, then the server's rule. A ``batching_params.pbtxt`` that
        does not parse raises :class:`ConfigError`: the version does not load, as in TF
        Serving."""
        if isinstance(model, BatchingParameters):
            return model
        if model is False or not (self.enabled or model is True):
            return None
        if self.per_model and model is None:
            file = Path(version_dir) / PER_MODEL_FILE
            return read_batching_parameters_file(file) if file.is_file() else None
        return self.parameters


BATCHING_DEFAULTS: dict[str, Any] = {
    "PREDICT_BATCHING": False,
    "PREDICT_BATCHING_PARAMETERS_FILE": None,
    "PREDICT_PER_MODEL_BATCHING_PARAMETERS": False,
}


def read_batching(values: Mapping[str, Any]) -> BatchingSettings:
    """The ``PREDICT_BATCHING*`` keys; a parameters file is read (and checked) here, once."""
    file = values["PREDICT_BATCHING_PARAMETERS_FILE"]
    try:
        parameters = read_batching_parameters_file(file) if file else BatchingParameters()
    except ConfigError as exc:
        raise ConfigError(f"PREDICT_BATCHING_PARAMETERS_FILE: {exc.message}") from exc
    return BatchingSettings(enabled=bool_value(values, "PREDICT_BATCHING"),
                            parameters=parameters,
                            per_model=bool_value(values, "PREDICT_PER_MODEL_BATCHING_PARAMETERS"))
