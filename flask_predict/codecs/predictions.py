"""Model outputs as rows of predictions, and the instances door of tensor-only predictors:
tensors as the JSON instances a custom predictor takes, and its predictions back as tensors."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InvalidInput, PredictorFailed
from ..types import Tensor, TensorSpec
from .arrays import json_value
from .dtypes import V2_TO_NUMPY
from .printing import dumps


# --- responses ------------------------------------------------------------------------------

def tensors_to_rows(outputs: Mapping[str, Tensor]) -> list[Any]:
    """Encode outputs as one prediction per row: the bare value for a single output,
    else an object keyed by output name."""
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        values = json_value(array, name)
        return values if isinstance(values, list) else [values]
    columns = {name: json_value(array, name) for name, array in outputs.items()}
    sizes = {len(v) if isinstance(v, list) else 1 for v in columns.values()}
    if len(sizes) != 1:
        raise InvalidInput("outputs have different batch sizes; ask for columnar format")
    (size,) = sizes
    return [{name: values[i] for name, values in columns.items()} for i in range(size)]


# --- the instances door of tensor-only predictors and back ----------------------------------

def tensors_to_instances(inputs: Mapping[str, Tensor]) -> list[Any]:
    """What a custom predictor receives from a tensor protocol: one input gives its rows,
    several give one object per row. float32 values arrive as the numbers they print as
    (``5.1``, not ``5.099999904632568``)."""
    return tensors_to_rows({name: _short_floats(array) for name, array in inputs.items()})


def _short_floats(array: Tensor) -> Tensor:
    if array.dtype != np.float32:
        return array
    return array.astype(str).astype(np.float64)


def predictions_to_tensor(predictions: Sequence[Any]) -> Tensor:
    """A custom predictor's list of predictions as one array: numbers stay numbers,
    text becomes BYTES, anything else one JSON document per prediction."""
    try:
        array = np.asarray(predictions)
    except (ValueError, TypeError):
        array = np.asarray([None])
    if array.dtype.kind in "biuf":
        return array
    if array.dtype.kind == "U":
        encoded: Tensor = np.frompyfunc(lambda s: s.encode("utf-8"), 1, 1)(array)
        return encoded.astype(object)
    out = np.empty(len(predictions), dtype=object)
    out[:] = [dumps(p) for p in predictions]
    return out


def predictions_to_outputs(predictions: Sequence[Any],
                           outputs: Sequence[TensorSpec]) -> dict[str, Tensor]:
    """A custom predictor's predictions as its declared outputs: one output takes them as
    they are; several need each prediction to be an object naming them. Numbers are cast
    to a declared numeric datatype."""
    if len(outputs) <= 1:
        spec = outputs[0] if outputs else TensorSpec("predictions", "BYTES", None)
        return {spec.name: _declared(predictions_to_tensor(predictions), spec)}
    names = [spec.name for spec in outputs]
    if not all(isinstance(p, dict) and set(names) <= p.keys() for p in predictions):
        raise PredictorFailed(f"the model declares outputs {names}: each prediction must be "
                              "an object naming them")
    return {spec.name: _declared(predictions_to_tensor([p[spec.name] for p in predictions]),
                                 spec) for spec in outputs}


def _declared(array: Tensor, spec: TensorSpec) -> Tensor:
    dtype = V2_TO_NUMPY.get(spec.datatype)
    if dtype is None or dtype.kind == "O" or array.dtype.kind not in "biuf":
        return array
    return array.astype(dtype, copy=False)
