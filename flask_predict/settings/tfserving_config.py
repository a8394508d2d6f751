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

PARSE_ERROR = "Error parsing text-format tensorflow.serving.ModelServerConfig"
"""How TF Serving (protobuf's text parser) begins saying that the file does not parse, with
``line:column`` after it; what TF Serving's own tests look for in its output."""
MESSAGE_TYPES = {"model_config_list": "ModelConfigList", "config": "ModelConfig",
                 "model_version_policy": "FileSystemStoragePathSourceConfig."
                                         "ServableVersionPolicy"}
"""The protobuf message type of each field that holds one, as errors name them."""

Token = tuple[str, str, int]
"""``(kind, text, offset)``: kind is ``string``, ``number``, ``ident`` or ``punct``."""


def parse_error(detail: str, text: str | None = None, offset: int | None = None) -> ConfigError:
    """TF Serving's words for a file that does not parse, at *offset* of *text* when known
    (protobuf's 1-based ``line:column``), then *detail*."""
    if text is None or offset is None:
        return ConfigError(f"{PARSE_ERROR}: {detail}")
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return ConfigError(f"{PARSE_ERROR}: {line}:{column}: {detail}")


def no_field(message: str, name: str, fields: str) -> ConfigError:
    """protobuf's words for a field its message does not have, and the ones it has."""
    return parse_error(f'Message type "tensorflow.serving.{message}" has no field named '
                       f'"{name}" (fields: {fields})')


def tokenize(text: str) -> list[Token]:
    """The tokens of *text*, each with its offset."""
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise parse_error(f"unexpected {text[position]!r}", text, position)
        if match.lastgroup:
            tokens.append((match.lastgroup, match.group(match.lastgroup), position))
        position = match.end()
    return tokens


def parse_text(text: str) -> Message:
    """Parse protobuf text format into nested ``[(field, value), ...]`` lists."""
    tokens = tokenize(text)
    message, position = _message(tokens, 0, closing=None, text=text)
    return message


def _message(tokens: list[Token], position: int, closing: str | None,
             text: str) -> tuple[Message, int]:
    fields: Message = []
    while position < len(tokens):
        kind, word, offset = tokens[position]
        if kind == "punct" and word == closing:
            return fields, position + 1
        if kind == "punct" and word in ";,":
            position += 1
            continue
        if kind != "ident":
            raise parse_error(f"expected a field name, got {word!r}", text, offset)
        name = word
        position += 1
        if position < len(tokens) and tokens[position][:2] == ("punct", ":"):
            position += 1
        if position >= len(tokens):
            raise parse_error(f"field {name!r} has no value", text, len(text))
        kind, word, offset = tokens[position]
        if kind == "punct" and word in "{<":
            value, position = _message(tokens, position + 1, "}" if word == "{" else ">", text)
            fields.append((name, value))
        elif kind == "punct" and word == "[":
            position += 1
            while position < len(tokens) and tokens[position][:2] != ("punct", "]"):
                if tokens[position][0] != "punct":
                    fields.append((name, _scalar(*tokens[position][:2])))
                position += 1
            if position >= len(tokens):
                raise parse_error(f"missing ']' in the list of {name!r}", text, len(text))
            position += 1
        elif kind == "punct":
            raise parse_error(f"field {name!r} has no value before {word!r}", text, offset)
        else:
            fields.append((name, _scalar(kind, word)))
            position += 1
    if closing is not None:
        raise parse_error(f"missing {closing!r}", text, len(text))
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
    for name, _ in top:
        if name == "custom_model_config":  # TF Serving's, for a server built with its own
            raise ConfigError("model config text: custom_model_config is not supported; "
                              "only model_config_list is")
        if name != "model_config_list":
            raise no_field("ModelServerConfig", name, "model_config_list, custom_model_config")
    entries = []
    for _, config_list in top:
        for name, config in _messages(config_list, "model_config_list"):
            if name != "config":
                raise no_field("ModelConfigList", name, "config")
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
                raise parse_error("version_labels needs a string key and an integer value, "
                                  f"got {pairs}")
            labels[str(pairs["key"])] = number
        elif name in ("model_type", "logging_config"):
            continue  # deprecated or about request logging: no effect on serving
        else:
            raise no_field("ModelConfig", name, "name, base_path, model_platform, "
                           "model_version_policy, version_labels, logging_config")
    if "name" not in entry:
        raise ConfigError("model config text: every config needs a name")
    if labels:
        entry["version_labels"] = labels
    platform = entry.pop("model_platform", None)
    if platform:
        entry["predictor"] = platform
    return entry


def _policy(policy: Message) -> dict[str, Any]:
    if len(policy) > 1:  # a oneof: protobuf refuses a second member
        raise parse_error("model_version_policy takes one of latest, all, specific, got "
                          f"{', '.join(name for name, _ in policy)}")
    if not policy:
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
    raise no_field(MESSAGE_TYPES["model_version_policy"], kind, "latest, all, specific")


def _messages(value: Value, name: str) -> Message:
    return _require_message(value, name)


def _require_message(value: Value, name: str) -> Message:
    if not isinstance(value, list):
        what = MESSAGE_TYPES.get(name, "a message")
        raise parse_error(f"{name!r} must be a message {{ ... }} ({what}), got {value!r}")
    return value
