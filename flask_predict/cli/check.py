"""``flask-predict check DIR``: which plugin takes a version folder, whether it loads, and
what it says about itself, without starting a server.

*DIR* is a version folder (``models/iris/1``) or a model's base path (``models/iris``), in
which case every numbered version is checked.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..artifacts import version_folders, version_path
from ..errors import PredictError
from ..plugins import (check_options, detect_predictor, installed_names, load_predictor_class,
                       manifests)
from ..predictor import Predictor
from ..types import ModelMetadata, TensorSpec

PredictorLookup = Callable[[str], "type[Predictor]"]


@dataclass
class VersionCheck:
    """What checking one version folder found."""

    path: str
    predictor: str | None = None
    """The plugin that takes the folder; ``None`` when none could be chosen."""
    predictor_class: str | None = None
    loaded: bool = False
    seconds: float = 0.0
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def check_path(path: str, predictor: str | None = None,
               options: Mapping[str, Any] | None = None,
               lookup: PredictorLookup = load_predictor_class) -> list[VersionCheck]:
    """Check the version folder *path*, or every numbered version under it."""
    if not os.path.isdir(path):
        return [VersionCheck(os.path.abspath(path), error="not a directory")]
    versions = sorted(version_folders(path))
    folders = [version_path(path, v) for v in versions] if versions else [path]
    return [check_version(os.path.abspath(folder), predictor, options or {}, lookup)
            for folder in folders]


def check_version(folder: str, predictor: str | None, options: Mapping[str, Any],
                  lookup: PredictorLookup) -> VersionCheck:
    """Choose the plugin for *folder* (as a server would: plugins' manifests), check the
    options against it, load it, read its metadata, release it."""
    result = VersionCheck(folder)
    loaded: Predictor | None = None
    try:
        found = manifests()
        result.predictor = predictor or detect_predictor(folder, options, found)
        check_options(os.path.basename(folder), result.predictor, options, found)
        cls = lookup(result.predictor)
        result.predictor_class = f"{cls.__module__}:{cls.__qualname__}"
        start = time.perf_counter()
        loaded = cls.from_path(folder, **options)
        result.metadata = describe(loaded.metadata())
        result.seconds = time.perf_counter() - start
        result.loaded = True
    except PredictError as exc:
        result.error = exc.message
    except Exception as exc:  # a broken artifact raises anything: report it, go on
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if loaded is not None:
            loaded.close()
    return result


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


def render(checks: list[VersionCheck]) -> str:
    """The human-readable report."""
    lines = []
    for check in checks:
        lines.append(check.path)
        if check.predictor is not None:
            lines.append(f"  plugin:     {check.predictor} ({check.predictor_class or '?'})")
        if not check.loaded:
            lines.append(f"  loads:      no: {check.error}")
            if check.predictor is not None and check.predictor_class is None:
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
    return "\n".join(lines)


def as_json(checks: list[VersionCheck]) -> str:
    """The report as a JSON document (one object per version folder)."""
    return json.dumps([{
        "path": c.path, "predictor": c.predictor, "predictor_class": c.predictor_class,
        "loaded": c.loaded, "error": c.error, "metadata": c.metadata or None,
    } for c in checks], indent=2)


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
