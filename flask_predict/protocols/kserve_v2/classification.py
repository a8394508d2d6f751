"""Triton's classification extension: an output answered as its top N classes.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/
extension_classification.md

A requested output with ``"parameters": {"classification": N}`` comes back as BYTES of shape
``[batch, N]`` (``[N]`` for a one-dimensional output), each element
``"<value>:<index>[:<label>]"``, largest value first. Labels are the model's ``classes``
property (scikit-learn and XGBoost classifiers) when the output has one value per class.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import codecs
from ...errors import InvalidInput
from ...types import Tensor


def classify(array: Tensor, count: int, labels: Sequence[Any] | None, name: str) -> Tensor:
    """The *count* largest values of each batch row of *array*, as BYTES elements."""
    if array.dtype.kind not in "biuf":
        raise InvalidInput(f"output {name!r}: classification needs numbers, the output is "
                           f"{codecs.datatype_of(array)}")
    rows = array.reshape(1, -1) if array.ndim <= 1 else array.reshape(len(array), -1)
    width = rows.shape[1]
    top = min(count, width)
    if labels is not None and len(labels) != width:
        labels = None
    order = np.argsort(-rows.astype(np.float64), axis=1, kind="stable")[:, :top]
    out = np.empty((rows.shape[0], top), dtype=object)
    for row, indices in enumerate(order):
        for column, index in enumerate(indices.tolist()):
            value = rows[row, index]
            text = f"{value:f}" if rows.dtype.kind == "f" else str(int(value))
            label = f":{labels[index]}" if labels is not None else ""
            out[row, column] = f"{text}:{index}{label}".encode()
    return out if array.ndim > 1 else out.reshape(top)
