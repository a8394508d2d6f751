"""The arrays of a batch, as TF Serving's ``BatchingSession`` handles them: one request's row
count, a batch's inputs merged (and padded), its outputs split back into each request's
rows; its error messages are TF Serving's."""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import FailedPrecondition, InvalidInput
from ..settings.batching import BatchingParameters

Arrays = Mapping[str, np.ndarray]


def task_rows(inputs: Arrays) -> int:
    """The rows of one request: its inputs' equal first dimension (TF Serving's checks)."""
    if not inputs:
        raise InvalidInput("Batching Run() must have at least one input tensor")
    sizes = set()
    for array in inputs.values():
        if array.ndim == 0:
            raise InvalidInput("Batching Run() input tensors must have at least one dimension")
        sizes.add(array.shape[0])
    if len(sizes) > 1:
        raise InvalidInput("Batching Run() input tensors must have equal 0th-dimension size")
    return int(sizes.pop())


def padded_size(rows: int, allowed: Sequence[int]) -> int:
    """The first allowed batch size that holds *rows* (*rows* itself when none is set)."""
    return next((size for size in allowed if size >= rows), rows) if rows else 0


def merge_inputs(requests: Sequence[Arrays], rows: int, parameters: BatchingParameters
                 ) -> tuple[dict[str, np.ndarray], int]:
    """One batch's inputs from its requests' (*rows* rows in all; variable lengths padded,
    rows padded up to an allowed size with copies of the first row), and its padded rows."""
    padded = padded_size(rows, parameters.allowed_batch_sizes)
    if len(requests) == 1 and padded == rows:
        return dict(requests[0]), rows
    merged = {}
    for name in requests[0]:
        arrays = [inputs[name] for inputs in requests]
        if parameters.pad_variable_length_inputs:
            arrays = pad_to_same_shape(arrays)
        if padded > rows:
            arrays.append(np.repeat(arrays[0][:1], padded - rows, axis=0))
        merged[name] = np.concatenate(arrays)
    return merged, padded


def pad_to_same_shape(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Arrays of one input padded past their first dimension to the largest of each, with
    each array's own first element (as TF Serving pads variable-length inputs)."""
    largest = tuple(max(sizes) for sizes in zip(*(array.shape[1:] for array in arrays)))
    out = []
    for array in arrays:
        if array.shape[1:] == largest:
            out.append(array)
            continue
        fill = array.flat[0] if array.size else np.zeros((), array.dtype)[()]
        grown = np.full((array.shape[0], *largest), fill, dtype=array.dtype)
        grown[tuple(slice(0, size) for size in array.shape)] = array
        out.append(grown)
    return out


def split_outputs(outputs: Mapping[str, Any], sizes: Sequence[int],
                  padded: int) -> list[dict[str, np.ndarray]]:
    """Each request's rows of the batch's outputs, in order, the padding dropped."""
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    for array in arrays.values():
        if array.ndim == 0:
            raise FailedPrecondition("Batched output tensor has 0 dimensions")
        if array.shape[0] != padded:
            raise FailedPrecondition("Batched output tensor's 0th dimension does not equal the "
                                     "sum of the 0th dimension sizes of the input tensors")
    if len(sizes) == 1 and sizes[0] == padded:
        return [arrays]
    bounds = list(itertools.accumulate(sizes, initial=0))
    return [{name: array[start:stop] for name, array in arrays.items()}
            for start, stop in zip(bounds, bounds[1:])]
