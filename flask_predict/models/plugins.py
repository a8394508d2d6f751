"""Predictor plugins: entry points in two groups.

``flask_predict.predictors``: name -> the :class:`~flask_predict.Predictor` class. Imported
only for the models that use it, so unused frameworks never load.

``flask_predict.manifests``: the same name -> a :class:`Manifest`, from a module that
imports no framework. It says which options ``from_path`` takes (the master checks model
settings against it before any worker starts) and how sure the plugin is that it can load
a version folder (auto-detection when a model names no ``predictor``). A third party's
plugin ships both entry points exactly as the bundled ones do.
"""

from __future__ import annotations

import inspect
import logging
import sys
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping

from ..errors import ConfigError, PredictorNotFound, UnreadableModel, did_you_mean
from ..predictor import Predictor
from ..storage.artifacts import artifact_plugin
from ..types import ModelSpec
from .mlmodel import is_mlflow_folder, mlflow_plugin, read_mlmodel

GROUP = "flask_predict.predictors"
MANIFEST_GROUP = "flask_predict.manifests"

logger = logging.getLogger(__name__)

BUNDLED = ("sklearn", "xgboost", "lightgbm", "catboost", "onnx", "tensorflow", "custom", "mlflow")
"""The plugins this project ships, each installed by the ``flask-predict`` extra of its name."""

Detector = Callable[[str, Mapping[str, Any]], float]
"""``detect(version_folder, options)`` -> confidence from 0 (not mine) to 1 (certainly
mine) that the plugin loads the folder with those model options."""


@dataclass(frozen=True)
class Manifest:
    """What the core may know about a plugin without importing its framework."""

    options: frozenset[str] | None = None
    """Option names ``from_path`` accepts; ``None`` when the plugin does not say."""
    detect: Detector | None = None
    """Auto-detection; ``None``: the plugin is used only when a model names it."""
    shared: bool | Callable[[Mapping[str, Any]], bool] = False
    """Whether a version loaded with these options may be loaded once, in the gunicorn
    master before it forks, and used by every worker (:mod:`flask_predict.models.sharing`): its
    framework survives ``fork`` and loading it starts no thread pool (the master limits
    OpenMP and BLAS to one thread while it loads). A function of the model's options, or
    one answer for every model."""

    mlflow_flavors: frozenset[str] = frozenset()
    """The MLflow flavors the plugin loads from an MLflow model folder's own files
    (:mod:`.mlmodel`, :meth:`~flask_predict.Predictor.from_mlflow`)."""
    runner: bool = False
    """Whether, under the packaged gunicorn server, the versions this plugin loads run in the
    runner process (:mod:`flask_predict.runner`): its framework cannot be forked (TensorFlow,
    ONNX Runtime), so it loads once per machine or GPU there and no worker imports it. Its
    predictor must take concurrent calls and answer through the tensor door,
    ``classify`` and ``regress`` (the contract's defaults over them run in the worker)."""

    def shares(self, options: Mapping[str, Any]) -> bool:
        """Whether a model with *options* is loaded once per machine."""
        return bool(self.shared(options) if callable(self.shared) else self.shared)


def installed_names() -> list[str]:
    """Names of every installed predictor plugin."""
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def load_predictor_class(name: str) -> type[Predictor]:
    """Import the plugin called *name*; only the plugins a config names are ever imported."""
    found = entry_points(group=GROUP)
    matches = [ep for ep in found if ep.name == name]
    if not matches:
        raise PredictorNotFound(f"no predictor {name!r}; installed: {installed_names()}"
                                f"{install_hint(name)}")
    values = sorted({ep.value for ep in matches})
    if len(values) > 1:
        raise ConfigError(f"predictor {name!r} is claimed by {values}")
    try:
        loaded = matches[0].load()
    except ImportError as exc:
        raise ConfigError(f"predictor {name!r} ({matches[0].value}) cannot be imported: {exc}")
    return check_predictor_class(loaded, name)


def check_predictor_class(cls: Any, name: str) -> type[Predictor]:
    """Raise :class:`ConfigError` unless *cls* is a concrete :class:`Predictor` subclass."""
    if not (inspect.isclass(cls) and issubclass(cls, Predictor)) or inspect.isabstract(cls):
        raise ConfigError(f"predictor {name!r} is {cls!r}, not a concrete Predictor subclass")
    return cls


def manifests() -> dict[str, Manifest]:
    """Every installed plugin's manifest, by plugin name (none framework-heavy)."""
    found: dict[str, Manifest] = {}
    for ep in entry_points(group=MANIFEST_GROUP):
        try:
            manifest = ep.load()
        except Exception as exc:  # a broken third-party manifest must not stop the others
            logger.warning("plugin manifest %r (%s) cannot be loaded: %s", ep.name, ep.value,
                           exc)
            continue
        if isinstance(manifest, Manifest):
            found[ep.name] = manifest
        else:
            logger.warning("plugin manifest %r is %r, not a flask_predict.models.plugins.Manifest",
                           ep.name, manifest)
    return found


def detect_predictor(model_dir: str, options: Mapping[str, Any],
                     candidates: Mapping[str, Manifest] | None = None) -> str:
    """The plugin that loads *model_dir*: the one whose manifest is most confident.

    :raises ConfigError: no plugin claims the folder, or two claim it equally.
    """
    candidates = manifests() if candidates is None else candidates
    if is_mlflow_folder(model_dir):  # its MLmodel says, not the files' names
        served = {flavor: name for name, manifest in sorted(candidates.items())
                  for flavor in manifest.mlflow_flavors}
        return mlflow_plugin(read_mlmodel(model_dir), served, set(candidates))
    scores: dict[str, float] = {}
    unreadable: UnreadableModel | None = None
    for name, manifest in candidates.items():
        if manifest.detect is None:
            continue
        try:
            score = float(manifest.detect(model_dir, options))
        except UnreadableModel as exc:  # not this plugin's to tell; another may claim it
            unreadable = exc
            continue
        except ConfigError:
            raise
        except Exception as exc:
            logger.warning("plugin %r failed to inspect %r: %s", name, model_dir, exc)
            continue
        if score > 0:
            scores[name] = score
    if not scores and unreadable is not None:
        raise unreadable
    if not scores:
        known = artifact_plugin(model_dir)
        if known is not None and known[1] not in candidates:
            raise ConfigError(f"{model_dir!r} holds {known[0]}, which the {known[1]!r} plugin "
                              f"loads, and it is not installed{install_hint(known[1])}")
        raise ConfigError(f"no installed plugin recognises the files in {model_dir!r} "
                          f"(detecting plugins: {sorted(n for n, m in candidates.items() if m.detect)}); "
                          "set 'predictor' or 'class' in the model config")
    best = max(scores.values())
    winners = sorted(name for name, score in scores.items() if score == best)
    if len(winners) > 1:
        raise ConfigError(f"plugins {winners} all claim {model_dir!r}; set 'predictor' in "
                          "the model config")
    return winners[0]


def install_hint(plugin: str) -> str:
    """``; install it: pip install "flask-predict[<plugin>]"`` for a bundled plugin, else
    an empty string."""
    if plugin not in BUNDLED:
        return ""
    return f'; install it: pip install "flask-predict[{plugin}]"'


def check_options(model: str, predictor: str | None, options: Mapping[str, Any],
                  candidates: Mapping[str, Manifest]) -> None:
    """Refuse model options the plugin does not take, with a "did you mean" hint.

    With no ``predictor`` named, an option must be known to some detecting plugin. A
    plugin without a manifest (or one that declares no options) is not checked.
    """
    if predictor is not None:
        manifest = candidates.get(predictor)
        if manifest is None or manifest.options is None:
            return
        known = set(manifest.options)
    else:
        declared = [m.options for m in candidates.values() if m.detect is not None]
        if not declared or any(o is None for o in declared):
            return
        known = set().union(*[o for o in declared if o is not None])
    for option in sorted(options):
        if option not in known:
            raise ConfigError(f"model {model!r}: unknown setting {option!r}"
                              f"{did_you_mean(option, known)}")


def lazy_attributes(package: str, module: str = "predictor") -> Callable[[str], Any]:
    """A module ``__getattr__`` for a plugin package: the names of its ``__all__``, from
    ``<package>.<module>``, imported on first use, so importing the package (for its
    manifest) loads no framework::

        __getattr__ = lazy_attributes(__name__)

    Any other name is missing at once: code that probes every loaded module for a name
    (skops and pickle's ``whichmodule`` do) imports no framework.
    """
    def attribute(name: str) -> Any:
        if name.startswith("__") or name not in getattr(sys.modules.get(package), "__all__", ()):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            return getattr(import_module(f"{package}.{module}"), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return attribute


def plugin_for(spec: ModelSpec, path: str) -> str:
    """The plugin that loads version folder *path* of *spec*: the one it names, else the one
    detected from the files (``flask-predict check`` reports it the same way)."""
    return spec.predictor or detect_predictor(path, spec.options)
