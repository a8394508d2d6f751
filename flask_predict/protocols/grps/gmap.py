"""grps's ``GenericMapData`` (``gmap``) in JSON: string-keyed maps of strings, bytes
(base64), int32, int64 (numbers or strings), floats and doubles (``NaN``/``Infinity`` as
strings, as protobuf's JSON mapping writes them). For a model fitted on a table, one gmap
is one row: its maps merged, each key a column (:func:`gmap_row`)."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any, Mapping

import numpy as np

from ... import codecs
from ...errors import InvalidInput, PredictorFailed
from ...types import Tensor

GMAP_FIELDS = ("s_s", "s_b", "s_i32", "s_i64", "s_f", "s_d")
INT32 = (-(2 ** 31), 2 ** 31 - 1)
INT64 = (codecs.INT64_MIN, codecs.INT64_MAX)
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def decode_gmap(value: Any) -> dict[str, dict[str, Any]]:
    """A ``GenericMapData``: its map fields, bytes decoded from base64, int64 as ``int``.

    Unknown fields are ignored, as protobuf's parser does.
    """
    if not isinstance(value, dict):
        raise InvalidInput("'gmap' must be an object")
    decoded: dict[str, dict[str, Any]] = {}
    for field in GMAP_FIELDS:
        entries = value.get(field)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise InvalidInput(f"gmap.{field} must be an object")
        decoded[field] = {key: _map_value(field, key, v) for key, v in entries.items()}
    return decoded


def _map_value(field: str, key: str, value: Any) -> Any:
    where = f"gmap.{field}[{key!r}]"
    if field == "s_s":
        if isinstance(value, str):
            return value
    elif field == "s_b":
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidInput(f"{where}: invalid base64 data")
    elif field in ("s_i32", "s_i64"):
        low, high = INT32 if field == "s_i32" else INT64
        number = _integer(value)
        if number is not None and low <= number <= high:
            return number
    else:
        if isinstance(value, str) and value in NON_FINITE:
            return NON_FINITE[value]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    raise InvalidInput(f"{where}: {codecs.preview(value)} is not a valid {field} value")


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def gmap_row(gmap: Mapping[str, Mapping[str, Any]]) -> dict[str, Tensor]:
    """A decoded gmap as one row of a table: each key of each map a column holding its one
    value (text from ``s_s`` and ``s_b``, numbers from the others); a key in two maps is
    refused."""
    row: dict[str, Tensor] = {}
    where: dict[str, str] = {}
    for field, entries in gmap.items():
        for key, value in entries.items():
            if key in row:
                raise InvalidInput(f"gmap: {key!r} is in both {where[key]} and {field}: a "
                                   "row gives each column once")
            column = np.empty(1, dtype=object) if field in ("s_s", "s_b") else np.empty(
                1, dtype=np.int64 if field in ("s_i32", "s_i64") else np.float64)
            column[0] = value
            row[key], where[key] = column, field
    if not row:
        raise InvalidInput(f"gmap: no values in {', '.join(GMAP_FIELDS)}; a row names each "
                           "column of the model in the map of its type (s_s for text)")
    return row


def is_gmap(value: Any) -> bool:
    return (isinstance(value, dict) and bool(value)
            and all(k in GMAP_FIELDS and isinstance(v, dict) for k, v in value.items()))


def encode_gmap(gmap: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A ``GenericMapData``: bytes as base64, int64 as strings, empty maps left out."""
    encoded: dict[str, Any] = {}
    for field in GMAP_FIELDS:
        entries = gmap.get(field)
        if not entries:
            continue
        try:
            encoded[field] = {str(k): _encode_map_value(field, v) for k, v in entries.items()}
        except (TypeError, ValueError):
            raise PredictorFailed(f"the model returned a gmap whose {field} values are not "
                                  "of that field's type")
    return encoded


def _encode_map_value(field: str, value: Any) -> Any:
    if field == "s_s":
        return value if isinstance(value, str) else text_value(value)
    if field == "s_b":
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return base64.b64encode(data).decode("ascii")
    if field == "s_i32":
        return int(value)
    if field == "s_i64":
        return str(int(value))
    number = float(value)
    if not math.isfinite(number):
        return non_finite_text(number)
    # s_f is a float32 field: print its shortest text, as protobuf does
    return float(str(np.float32(number))) if field == "s_f" else number


def non_finite_text(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def text_value(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
