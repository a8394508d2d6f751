"""The small YAML writer of grps's metadata texts (mappings, lists, scalars)."""

from __future__ import annotations

from typing import Any, Mapping

from ... import codecs


def to_yaml(value: Any, indent: int = 0) -> str:
    """A small YAML writer for the metadata text (mappings, lists, scalars)."""
    pad = "  " * indent
    if isinstance(value, Mapping):
        if not value:
            return pad + "{}\n"
        lines = []
        for key, item in value.items():
            if _is_block(item):
                lines.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}\n")
        return "".join(lines)
    if isinstance(value, (list, tuple)):
        if not value:
            return pad + "[]\n"
        lines = []
        for item in value:
            if _is_block(item):
                text = to_yaml(item, indent + 1)
                lines.append(f"{pad}- {text.lstrip()}")
            else:
                lines.append(f"{pad}- {_scalar(item)}\n")
        return "".join(lines)
    return pad + _scalar(value) + "\n"


def _is_block(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple)) and bool(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (Mapping, list, tuple)):
        return "{}" if isinstance(value, Mapping) else "[]"
    return codecs.dumps(str(value)).decode()
