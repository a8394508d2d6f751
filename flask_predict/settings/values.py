"""Setting values read and checked: each parser takes the mapping of values and a key, and
raises :class:`~flask_predict.errors.ConfigError` naming the key. The core's settings, each
protocol's section and each model's entry all read their values here."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError


def timeout_value(value: Any, what: str) -> float | None:
    """A time limit in seconds: 0 for no limit, ``None`` where none is set (a model then
    takes the app's limit)."""
    if value is None:
        return None
    return float(number_value({what: value}, what, float, minimum=0))


def number_value(values: Mapping[str, Any], key: str, kind: type, minimum: float,
            maximum: float | None = None) -> Any:
    value = values[key]
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, got {value!r}")
    if number < minimum:
        raise ConfigError(f"{key} must be at least {minimum}, got {value!r}")
    if maximum is not None and number > maximum:
        raise ConfigError(f"{key} must be at most {maximum}, got {value!r}")
    return number


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
