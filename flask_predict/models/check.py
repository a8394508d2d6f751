"""``flask-predict check PATH``: whether ``flask-predict serve`` would load a model, and what
each version says about itself, without starting a server.

*PATH* is what ``serve`` takes: a model's base path (its numbered version folders beneath,
as ``--model_base_path``) or a model config file (``--model_config_file``). The check runs
``serve``'s own loading rules, nothing of its own: the model configuration read as the
server reads it (:func:`flask_predict.settings.model_config.load_models`), the master's check
(:func:`flask_predict.models.startup.check_models`), a worker's first load
(:meth:`flask_predict.models.repository.ModelRepository.sync`, warm-up included) and the start-up
rule (:func:`flask_predict.models.startup.failures`). So it agrees with ``serve`` on every folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .store import model_store
from .startup import check_models, failures
from ..errors import ConfigError
from ..storage.artifacts import version_folders, version_path
from .plugins import installed_names, load_predictor_class, plugin_for
from .served import ServedModel
from ..predictor import Predictor
from ..settings.model_config import load_models
from ..storage import local_path, shown
from ..storage.uri import is_remote
from ..types import ModelMetadata, ModelSpec, TensorSpec

PredictorLookup = Callable[[str], "type[Predictor]"]


@dataclass
class VersionCheck:
    """What checking one version folder (or one model, when it has none) found."""

    model: str
    path: str
    predictor: str | None = None
    """The plugin that loads the folder; ``None`` when none could be chosen."""
    predictor_class: str | None = None
    loaded: bool = False
    seconds: float = 0.0
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    """Every model's versions as ``serve`` would load them, and whether it would start."""

    versions: list[VersionCheck] = field(default_factory=list)
    not_served: dict[str, list[int]] = field(default_factory=dict)
    """Versions on disk that the version policy leaves out, by model."""
    stop: str | None = None
    """Why ``serve`` would not start (its one line); ``None`` when it would."""

    @property
    def ok(self) -> bool:
        return self.stop is None


def read_specs(path: str, predictor: str | None = None, options: Mapping[str, Any] | None = None,
               name: str | None = None) -> tuple[ModelSpec, ...]:
    """The models ``serve --model_base_path PATH`` (a folder) or ``serve
    --model_config_file PATH`` (a file) would serve, read as it reads them."""
    if os.path.isfile(path):
        if predictor is not None or options:
            raise ConfigError("--predictor and --option go with a model folder; a model config "
                              "file names its models' settings itself")
        return load_models(None, os.path.abspath(path))
    where = path if is_remote(path) else os.path.abspath(path)  # a bucket: as serve reads it
    entry: dict[str, Any] = {"base_path": where, **(options or {})}
    if predictor is not None:
        entry["predictor"] = predictor
    model = name or where.rstrip("/").rsplit("/", 1)[-1] or "default"
    return load_models({model: entry}, None)


def check(path: str, predictor: str | None = None, options: Mapping[str, Any] | None = None,
          name: str | None = None, lookup: PredictorLookup = load_predictor_class) -> Report:
    """Check what ``serve`` would do with *path* (see :func:`read_specs`)."""
    try:
        specs = read_specs(path, predictor, options, name)
    except ConfigError as exc:
        where = path if is_remote(path) else os.path.abspath(path)
        return Report([VersionCheck(name or "-", where, error=exc.message)],
                      stop=exc.message)
    return check_specs(specs, lookup)


def check_specs(specs: tuple[ModelSpec, ...],
                lookup: PredictorLookup = load_predictor_class) -> Report:
    """The master's check of each model, then one first load of those that pass it, then the
    start-up rule: ``serve``'s steps, reported version by version."""
    report = Report()
    refused: list[str] = []
    passed: list[ModelSpec] = []
    for spec in specs:
        try:
            check_models([spec])
        except ConfigError as exc:
            report.versions.append(VersionCheck(spec.name, spec.base_path, error=exc.message))
            refused.append(exc.message)
            continue
        passed.append(spec)
    seconds: dict[tuple[str, int], float] = {}

    def told(event: str, model: str, version: int, took: float) -> None:
        seconds[(model, version)] = took

    repository, _ = model_store(tuple(passed), None, None, None, lookup, listener=told)
    try:
        repository.sync(passed)
        for served in repository.models():
            report.versions.extend(_versions(served, seconds))
            on_disk = _on_disk(served)
            left = sorted(set(on_disk) - set(served.statuses))
            if left:
                report.not_served[served.name] = left
        found = failures(repository.models())
    finally:
        repository.close()
    if refused:
        report.stop = refused[0]
    elif found:
        report.stop = "; ".join(map(str, found))
    return report


def _on_disk(served: ServedModel) -> list[int]:
    return sorted(version_folders(local_path(served.spec.base_path)))


def _versions(served: ServedModel, seconds: Mapping[tuple[str, int], float]
              ) -> list[VersionCheck]:
    found: list[VersionCheck] = []
    for version, status in sorted(served.statuses.items()):
        loaded = served.versions.get(version)
        if loaded is None:
            failed = [failure for failure in failures([served]) if failure.version == version]
            path = failed[0].path if failed else served.spec.base_path
            found.append(VersionCheck(served.name, path, error=status.cause or status.error))
            continue
        cls = type(loaded.predictor)
        found.append(VersionCheck(
            served.name, loaded.path, plugin_for(served.spec, loaded.path),
            f"{cls.__module__}:{cls.__qualname__}", loaded=True,
            seconds=seconds.get((served.name, version), 0.0),
            metadata=describe(loaded.metadata)))
    return found


def describe(metadata: ModelMetadata) -> dict[str, Any]:
    """*metadata* as plain JSON values."""
    return {
        "platform": metadata.platform,
        "default_signature": metadata.default_signature,
        "signatures": {
            name: {"method_name": sig.method_name,
                   "inputs": [_tensor(spec) for spec in sig.inputs],
                   "outputs": [_tensor(spec) for spec in sig.outputs]}
            for name, sig in metadata.signatures.items()},
        "properties": json.loads(json.dumps(dict(metadata.properties), default=str)),
    }


def _tensor(spec: TensorSpec) -> dict[str, Any]:
    shape = None if spec.shape is None else list(spec.shape)
    return {"name": spec.name, "datatype": spec.datatype, "shape": shape}


def _has_routine(path: str) -> bool:
    """A ``predictor.py`` in the version folder *path*, or in a version folder under it."""
    folders = [path, *(version_path(path, v) for v in version_folders(path))]
    return any(os.path.isfile(os.path.join(folder, "predictor.py")) for folder in folders)


def render(report: Report) -> str:
    """The human-readable report, ending with what ``serve`` would do."""
    lines = []
    for check in report.versions:
        lines.append(f"{shown(check.path)}  (model {check.model!r})")  # a bucket: its URI
        if check.predictor is not None:
            lines.append(f"  plugin:     {check.predictor} ({check.predictor_class or '?'})")
        if check.predictor != "custom" and _has_routine(check.path):
            lines.append("  note:       predictor.py holds no prediction class the custom plugin "
                         "recognises; to serve one, name it in the model's settings "
                         "(\"predictor\": \"custom\", \"class\": \"predictor.MyClass\")")
        if not check.loaded:
            lines.append(f"  loads:      no: {check.error}")
            if check.error and "no predictor" in check.error:
                lines.append(f"  installed plugins: {', '.join(installed_names()) or 'none'}")
            continue
        meta = check.metadata
        lines.append(f"  loads:      yes, in {check.seconds:.2f}s")
        lines.append(f"  platform:   {meta['platform']}")
        for name, sig in meta["signatures"].items():
            default = " (default)" if name == meta["default_signature"] else ""
            lines.append(f"  signature:  {name}{default} [{sig['method_name']}]")
            for kind in ("inputs", "outputs"):
                for spec in sig[kind]:
                    shape = "?" if spec["shape"] is None else spec["shape"]
                    lines.append(f"    {kind[:-1]:<7} {spec['name']}: {spec['datatype']} {shape}")
        for key, value in meta["properties"].items():
            text = str(value)
            if len(text) > 100:
                text = text[:96] + " ..."  # the whole value is in --json
            lines.append(f"  {key}: {text}")
    for model, versions in report.not_served.items():
        lines.append(f"model {model!r}: versions {versions} are on disk, not served by its "
                     "version policy (not loaded)")
    lines.append("serve: starts" if report.ok else f"serve: does not start: {report.stop}")
    return "\n".join(lines)


def as_json(report: Report) -> str:
    """The report as a JSON document: one object per version folder, and the verdict."""
    return json.dumps({
        "versions": [{
            "model": c.model, "path": shown(c.path), "predictor": c.predictor,
            "predictor_class": c.predictor_class, "loaded": c.loaded, "error": c.error,
            "metadata": c.metadata or None,
        } for c in report.versions],
        "not_served": report.not_served,
        "starts": report.ok, "stop": report.stop,
    }, indent=2)


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (VALUE JSON-decoded when it is JSON) into plugin options."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option wants KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options
