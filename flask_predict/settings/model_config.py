"""Model configuration: ``PREDICT_MODELS``, the model config file (our JSON, or TF Serving's
text-format ``model_config_list``) and each model's entry, turned into :class:`ModelSpec`s."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from .batching import model_batching
from ..storage import is_remote, parse_uri
from ..types import ModelSpec, VersionPolicy
from .values import number_value, timeout_value

MODEL_KEYS = frozenset({"base_path", "predictor", "version_policy", "version_labels", "versions",
               "default_version", "model_platform", "options", "timeout_seconds",
               "payload_log", "batching", "runner"})
"""Keys of a model's entry that are not options for its plugin."""


def load_models(models: Any, config_file: str | os.PathLike[str] | None) -> tuple[ModelSpec, ...]:
    """The model specs from ``PREDICT_MODELS`` and the config file, names unique."""
    return with_config_file(environment_models(models), config_file)


def environment_models(models: Any) -> tuple[ModelSpec, ...]:
    """The model specs of the ``PREDICT_MODELS`` value *models* (``None``: none)."""
    if models is None:
        return ()
    return tuple(parse_models(models, base_dir=None, origin="PREDICT_MODELS"))


def with_config_file(fixed: tuple[ModelSpec, ...],
                     config_file: str | os.PathLike[str] | None) -> tuple[ModelSpec, ...]:
    """*fixed* (``PREDICT_MODELS``'s) and the config file's model specs, names unique: what
    the watcher reads again on every poll, the file as it is now."""
    specs = list(fixed)
    if config_file:
        specs.extend(read_model_config_file(config_file))
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ConfigError(f"model {spec.name!r} is configured twice")
        seen.add(spec.name)
    return tuple(specs)


def read_model_config_file(path: str | os.PathLike[str]) -> list[ModelSpec]:
    """Read a model config file: our JSON format, or TF Serving's text-format
    ``model_config_list`` (see :mod:`flask_predict.settings.tfserving_config`)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read model config file {str(file)!r}: {exc.strerror}")
    origin = f"model config file {str(file)!r}"
    if text.lstrip().startswith(("{", "[")):
        try:
            models = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{origin} is not valid JSON: {exc}")
    else:
        from .tfserving_config import parse_model_config_list

        try:
            models = parse_model_config_list(text)
        except ConfigError as exc:
            raise ConfigError(f"{origin}: {exc.message}") from exc
    if isinstance(models, Mapping) and "models" in models:
        models = models["models"]
    return parse_models(models, base_dir=file.parent, origin=origin)


def parse_models(models: Any, base_dir: Path | None, origin: str) -> list[ModelSpec]:
    """Turn ``{name: {...}}`` or ``[{"name": ..., ...}]`` into :class:`ModelSpec` objects."""
    if isinstance(models, str):
        try:
            models = json.loads(models)
        except ValueError as exc:
            raise ConfigError(f"{origin} is not valid JSON: {exc}")
    if isinstance(models, Mapping):
        entries = [(name, entry) for name, entry in models.items()]
    elif isinstance(models, list):
        entries = []
        for entry in models:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise ConfigError(f"{origin}: each model in the list needs a 'name'")
            entries.append((entry["name"], {k: v for k, v in entry.items() if k != "name"}))
    else:
        raise ConfigError(f"{origin} must map model names to settings")
    return [_model_spec(str(name), entry, base_dir, origin) for name, entry in entries]


def _model_spec(name: str, entry: Any, base_dir: Path | None, origin: str) -> ModelSpec:
    where = f"{origin}, model {name!r}"
    if not name or "/" in name or ":" in name:
        raise ConfigError(f"{where}: a model name must be non-empty, without '/' or ':'")
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: settings must be an object")
    if "base_path" not in entry:
        raise ConfigError(f"{where}: 'base_path' is required")
    options = dict(entry.get("options") or {})
    options.update({k: v for k, v in entry.items() if k not in MODEL_KEYS})
    predictor = entry.get("predictor")
    if predictor is not None and not isinstance(predictor, str):
        raise ConfigError(f"{where}: 'predictor' must be a plugin name")

    labels = entry.get("version_labels", entry.get("versions", {})) or {}
    if not isinstance(labels, Mapping):
        raise ConfigError(f"{where}: 'version_labels' must map names to version numbers")
    try:
        labels = {str(label): int(version) for label, version in labels.items()}
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: version labels must map to version numbers")
    default = entry.get("default_version")
    if default is not None:
        default = str(default)
        if default not in labels and not default.isdigit():
            raise ConfigError(f"{where}: default_version {default!r} is neither a label "
                              "nor a version number")
    spec = ModelSpec(
        name=name,
        base_path="",
        predictor=predictor,
        options=options,
        version_policy=parse_version_policy(entry.get("version_policy"), where),
        labels=labels,
        default_version=default,
        timeout_seconds=timeout_value(entry.get("timeout_seconds"), f"{where}: timeout_seconds"),
        payload_log=entry.get("payload_log"),
        batching=model_batching(entry.get("batching"), where),
        runner=_runner(entry.get("runner", True), where),
    )
    configured = str(entry["base_path"])
    if is_remote(configured):  # downloaded where the model loads, never while reading
        parse_uri(configured)  # a malformed URI is a configuration error
        return replace(spec, base_path=configured)
    base_path = Path(os.path.expanduser(configured))
    if base_dir is not None and not base_path.is_absolute():
        base_path = base_dir / base_path
    if not base_path.is_dir():
        raise ConfigError(f"{where}: base_path {str(base_path)!r} is not a directory")
    return replace(spec, base_path=str(base_path.resolve()))


def _runner(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: 'runner' must be true or false, got {value!r}")
    return value


def parse_version_policy(policy: Any, where: str) -> VersionPolicy:
    """TF Serving's policy in its JSON form: ``{"latest": {"num_versions": 2}}``,
    ``{"all": {}}`` or ``{"specific": {"versions": [1, 2]}}``."""
    if policy is None:
        return VersionPolicy()
    if not isinstance(policy, Mapping) or len(policy) != 1:
        raise ConfigError(f"{where}: version_policy must have one of 'latest', 'all', 'specific'")
    kind, body = next(iter(policy.items()))
    body = body or {}
    try:
        if kind == "latest":
            return VersionPolicy("latest", num_versions=int(body.get("num_versions", 1)))
        if kind == "all":
            return VersionPolicy("all")
        if kind == "specific":
            versions = body.get("versions", [])
            if not versions:
                raise ConfigError(f"{where}: a 'specific' version_policy needs 'versions'")
            return VersionPolicy("specific", versions=tuple(int(v) for v in versions))
    except (TypeError, ValueError, AttributeError):
        raise ConfigError(f"{where}: version_policy {policy!r} is malformed")
    raise ConfigError(f"{where}: unknown version_policy {kind!r}")
