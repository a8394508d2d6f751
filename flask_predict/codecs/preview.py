"""Values in error messages: quoted as compact JSON without printing more of them than
shown (floats as TF Serving's writer prints them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .tfnumbers.digits import write_decimal


def preview(value: Any, limit: int = 200) -> str:
    """*value* as compact JSON for an error message, cut after *limit* characters with
    ``...``; never prints more of it than that (a 64 MiB body costs no more than a small
    one)."""
    parts: list[str] = []
    room = [limit + 1]

    def emit(text: str) -> bool:
        parts.append(text[:room[0]])
        room[0] -= len(text)
        return room[0] > 0

    def walk(item: Any) -> bool:
        if isinstance(item, Mapping):
            if not emit("{"):
                return False
            for index, (key, sub) in enumerate(item.items()):
                if not emit(("," if index else "") + _short_json(str(key), room[0]) + ":"):
                    return False
                if not walk(sub):
                    return False
            return emit("}")
        if isinstance(item, (list, tuple)):
            if not emit("["):
                return False
            for index, sub in enumerate(item):
                if (index and not emit(",")) or not walk(sub):
                    return False
            return emit("]")
        return emit(_scalar_json(item, room[0]))

    walk(value)
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit] + "..."


def _short_json(text: str, room: int) -> str:
    return orjson.dumps(text[:max(room, 0) + 1]).decode("utf-8")


def _scalar_json(value: Any, room: int) -> str:
    if isinstance(value, str):
        return _short_json(value, room)
    if isinstance(value, float):
        return write_decimal(value, False)
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")[
            :max(room, 0) + 1]
    except TypeError:
        return repr(value)[:max(room, 0) + 1]


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, for messages: "an array", "a string", ..."""
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            dict: "an object"}.get(type(value), "a number")
