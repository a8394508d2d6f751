"""The lazy tier's settings: a repository root whose every sub-folder is a model, loaded on
first use and evicted least recently used under a per-worker byte cap
(:mod:`flask_predict.models.lazy`, docs/many-models.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError
from ..storage import is_remote
from .values import number_value

DEFAULTS: dict[str, Any] = {
    "PREDICT_LAZY_ROOT": None,
    "PREDICT_LAZY_MAX_BYTES": 2**30,
    "PREDICT_LAZY_RETRY_SECONDS": 30.0,
}


@dataclass(frozen=True)
class LazySettings:
    """Validated ``PREDICT_LAZY_*`` keys."""

    root: str
    """``PREDICT_LAZY_ROOT``: a local folder or a ``gs://``/``s3://`` prefix; each sub-folder
    is a model of that name (its numbered versions, or its files as version 1)."""
    max_bytes: int
    """``PREDICT_LAZY_MAX_BYTES``: the resident memory the tier's models may hold in one
    worker; past it, the least recently used are evicted."""
    retry_seconds: float
    """``PREDICT_LAZY_RETRY_SECONDS``: how long a model that failed to load answers its
    failure before a request tries it again."""


def read(values: Mapping[str, Any]) -> LazySettings | None:
    """The lazy tier's section, or ``None`` when ``PREDICT_LAZY_ROOT`` is unset."""
    root = values["PREDICT_LAZY_ROOT"]
    if not root:
        return None
    if not isinstance(root, str):
        raise ConfigError(f"PREDICT_LAZY_ROOT must be a folder or a bucket prefix, got {root!r}")
    if not is_remote(root):
        root = os.path.abspath(root)
    return LazySettings(
        root=root.rstrip("/") or root,
        max_bytes=number_value(values, "PREDICT_LAZY_MAX_BYTES", int, minimum=1),
        retry_seconds=number_value(values, "PREDICT_LAZY_RETRY_SECONDS", float, minimum=0))
