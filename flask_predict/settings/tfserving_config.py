"""TF Serving's model config file (``--model_config_file``), read without protobuf.

The file is a ``ModelServerConfig`` in protobuf text format::

    model_config_list {
      config {
        name: "half_plus_two"
        base_path: "/models/half_plus_two"
        model_platform: "tensorflow"
        model_version_policy { specific { versions: 1 versions: 2 } }
        version_labels { key: "stable" value: 1 }
        version_labels { key: "canary" value: 2 }
      }
    }

:func:`parse_model_config_list` turns it into the entries of our own JSON model config, so
both formats end in the same :class:`~flask_predict.types.ModelSpec` objects.
"""

from __future__ import annotations

import re
from typing import Any, Union

from ..errors import ConfigError

Value = Union[str, int, float, "Message"]
Message = list[tuple[str, Value]]
"""A text-format message: its fields in file order (repeated fields appear repeatedly)."""

_TOKEN = re.compile(r"""
    \s+ | \#[^\n]* |                               # whitespace and comments
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*') |
    (?P<number>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)) |
    (?P<ident>[A-Za-z_][A-Za-z0-9_.]*) |
    (?P<punct>[{}<>:;,\[\]])
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def tokenize(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs; kind is ``string``, ``number``, ``ident`` or ``punct``."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            line = text.count("\n", 0, position) + 1
            raise ConfigError(f"model config text: unexpected {text[position]!r} on line {line}")
        position = match.end()
        if match.lastgroup:
            tokens.append((match.lastgroup, match.group(match.lastgroup)))
    return tokens


def parse_text(text: str) -> Message:
    """Parse protobuf text format into nested ``[(field, value), ...]`` lists."""
    tokens = tokenize(text)
    message, position = _message(tokens, 0, closing=None)
    return message


def _message(tokens: list[tuple[str, str]], position: int,
             closing: str | None) -> tuple[Message, int]:
    fields: Message = []
    while position < len(tokens):
        kind, text = tokens[position]
        if kind == "punct" and text == closing:
            return fields, position + 1
        if kind == "punct" and text in ";,":
            position += 1
            continue
        if kind != "ident":
            raise ConfigError(f"model config text: expected a field name, got {text!r}")
        name = text
        position += 1
        if position < len(tokens) and tokens[position] == ("punct", ":"):
            position += 1
        if position >= len(tokens):
            raise ConfigError(f"model config text: field {name!r} has no value")
        kind, text = tokens[position]
        if kind == "punct" and text in "{<":
            value, position = _message(tokens, position + 1, "}" if text == "{" else ">")
            fields.append((name, value))
        elif kind == "punct" and text == "[":
            position += 1
            while tokens[position] != ("punct", "]"):
                if tokens[position][0] != "punct":
                    fields.append((name, _scalar(*tokens[position])))
                position += 1
            position += 1
        else:
            fields.append((name, _scalar(kind, text)))
            position += 1
    if closing is not None:
        raise ConfigError(f"model config text: missing {closing!r}")
    return fields, position


def _scalar(kind: str, text: str) -> Value:
    if kind == "string":
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text[1:-1])
    if kind == "number":
        return float(text) if any(c in text for c in ".eE") else int(text)
    return text  # an enum name or true/false


def parse_model_config_list(text: str) -> list[dict[str, Any]]:
    """The models of a ``model_config_list`` as entries of our JSON model config."""
    top = parse_text(text)
    unknown = sorted({name for name, _ in top if name != "model_config_list"})
    if unknown:
        raise ConfigError(f"model config text: unsupported field(s) {unknown}; only "
                          "model_config_list is supported")
    entries = []
    for _, config_list in top:
        for name, config in _messages(config_list, "model_config_list"):
            if name != "config":
                raise ConfigError(f"model config text: unknown field {name!r} in "
                                  "model_config_list")
            entries.append(_entry(_require_message(config, "config")))
    return entries


def _entry(config: Message) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    labels: dict[str, int] = {}
    for name, value in config:
        if name in ("name", "base_path", "model_platform"):
            entry[name] = str(value)
        elif name == "model_version_policy":
            entry["version_policy"] = _policy(_require_message(value, name))
        elif name == "version_labels":
            pairs = dict(_require_message(value, name))
            number = pairs.get("value")
            if "key" not in pairs or not isinstance(number, int):
                raise ConfigError("model config text: version_labels needs a string key and "
                                  "an integer value")
            labels[str(pairs["key"])] = number
        elif name in ("model_type", "logging_config"):
            continue  # deprecated or about request logging: no effect on serving
        else:
            raise ConfigError(f"model config text: unsupported field {name!r} in config")
    if "name" not in entry:
        raise ConfigError("model config text: every config needs a name")
    if labels:
        entry["version_labels"] = labels
    platform = entry.pop("model_platform", None)
    if platform:
        entry["predictor"] = platform
    return entry


def _policy(policy: Message) -> dict[str, Any]:
    if len(policy) != 1:
        raise ConfigError("model config text: model_version_policy needs one of latest, all, "
                          "specific")
    kind, body = policy[0]
    body = _require_message(body, kind)
    if kind == "latest":
        numbers = [v for name, v in body if name == "num_versions"]
        return {"latest": {"num_versions": numbers[-1]} if numbers else {}}
    if kind == "all":
        return {"all": {}}
    if kind == "specific":
        return {"specific": {"versions": [v for name, v in body if name == "versions"]}}
    raise ConfigError(f"model config text: unknown model_version_policy {kind!r}")


def _messages(value: Value, name: str) -> Message:
    return _require_message(value, name)


def _require_message(value: Value, name: str) -> Message:
    if not isinstance(value, list):
        raise ConfigError(f"model config text: {name!r} must be a message {{ ... }}")
    return value
