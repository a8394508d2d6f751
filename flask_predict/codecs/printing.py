"""Python values and numpy arrays -> JSON text: :func:`dumps` prints ``NaN``/``Infinity``
tokens and float32 values at float32 precision (AI Platform, grps); :func:`dumps_strict`
prints non-finite values as ``null`` (V2). TF Serving's own number writer is
:mod:`.tfnumbers`.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
import simplejson

from .dtypes import FLOAT32


def dumps(obj: Any) -> bytes:
    """Print *obj* as JSON; numpy arrays and scalars may appear anywhere in it.

    orjson prints numpy arrays directly, but writes non-finite floats as ``null``; when a
    ``null`` shows up and the value really holds NaN or infinity, simplejson prints it again
    with the ``NaN``/``Infinity`` tokens.
    """
    try:
        fast = orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)
        if b"null" not in fast or _all_finite(obj):
            return fast
    except TypeError:
        pass
    text: str = simplejson.dumps(obj, default=_plain, allow_nan=True, separators=(",", ":"))
    return text.encode()


def dumps_strict(obj: Any) -> bytes:
    """Print *obj* as strict JSON, non-finite floats as ``null`` (the V2 protocol's rule,
    as KServe and MLServer print them). Numpy arrays of numbers may appear anywhere."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def b64_value(data: bytes) -> dict[str, str]:
    return {"b64": base64.b64encode(data).decode("ascii")}


def _plain(value: Any) -> Any:
    # float32 values keep their shortest float32 text (2.05, not 2.049999952316284), as
    # orjson prints them on the fast path
    if isinstance(value, np.ndarray):
        if value.dtype == FLOAT32:
            return value.astype(str).astype(np.float64).tolist()
        return value.tolist()
    if isinstance(value, np.float32):
        return float(str(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return b64_value(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _all_finite(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.isfinite(obj).all())
    if isinstance(obj, np.floating):
        return bool(np.isfinite(obj))
    if isinstance(obj, Mapping):
        return all(_all_finite(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_all_finite(v) for v in obj)
    return True
