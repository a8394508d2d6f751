"""Predictor plugins: entry points in the group ``flask_predict.predictors``."""

from __future__ import annotations

import inspect
from importlib.metadata import entry_points
from typing import Any

from .errors import ConfigError, PredictorNotFound
from .predictor import Predictor

GROUP = "flask_predict.predictors"


def installed_names() -> list[str]:
    """Names of every installed predictor plugin."""
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def load_predictor_class(name: str) -> type[Predictor]:
    """Import the plugin called *name*; only the plugins a config names are ever imported."""
    found = entry_points(group=GROUP)
    matches = [ep for ep in found if ep.name == name]
    if not matches:
        raise PredictorNotFound(f"no predictor {name!r}; installed: {installed_names()}")
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
