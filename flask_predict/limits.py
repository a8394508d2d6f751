"""The per-request limits (``PREDICT_MAX_INSTANCES``, ``PREDICT_MAX_TENSOR_ELEMENTS``) as
checks every front end shares, REST or gRPC. No Flask here."""

from __future__ import annotations

import math
from typing import Iterable

from .errors import PayloadTooLarge
from .types import Limits


def check_instances(limits: Limits, count: int) -> None:
    """413 when one request holds more than ``PREDICT_MAX_INSTANCES`` instances."""
    if count > limits.max_instances:
        raise PayloadTooLarge(f"the request holds {count} instances; the limit is "
                              f"{limits.max_instances}")


def check_elements(limits: Limits, shape: Iterable[int], name: str) -> None:
    """413 when input *name* of *shape* holds more than ``PREDICT_MAX_TENSOR_ELEMENTS``
    elements (checked from the shape, before anything is allocated)."""
    count = math.prod(shape)
    if count > limits.max_tensor_elements:
        raise PayloadTooLarge(f"input {name!r} has {count} elements; the limit is "
                              f"{limits.max_tensor_elements}")
