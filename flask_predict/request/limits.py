"""The per-request limits (``PREDICT_MAX_INSTANCES``, ``PREDICT_MAX_TENSOR_ELEMENTS``) as
checks every front end shares, REST or gRPC. No Flask here."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ..errors import PayloadTooLarge
from ..types import Limits


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


def check_shape(limits: Limits, shape: tuple[int, ...], name: str) -> None:
    """Both checks for input *name* of *shape*, from the shape alone (before anything is
    allocated): its first dimension as its instances, its size as its elements (413)."""
    if shape and shape[0] > limits.max_instances:
        raise PayloadTooLarge(f"input {name!r}: shape {list(shape)} holds {shape[0]} "
                              f"instances; the limit is {limits.max_instances}")
    count = math.prod(shape)
    if count > limits.max_tensor_elements:
        raise PayloadTooLarge(f"input {name!r}: shape {list(shape)} has {count} elements; "
                              f"the limit is {limits.max_tensor_elements}")


def check_tensors(limits: Limits, tensors: Iterable[tuple[str, np.ndarray]],
                  batched: bool = True) -> None:
    """Both checks for named input arrays: the first dimension of each counts as its
    instances when *batched* (a 0-d array, or any array when not, as one), and its size as
    its elements."""
    for name, array in tensors:
        check_instances(limits, array.shape[0] if batched and array.ndim else 1)
        check_elements(limits, array.shape, name)
