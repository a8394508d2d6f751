"""The one dtype table and the one integer range check.

Every protocol names datatypes its own way; they all map onto the Open Inference Protocol V2
names (``FP32``, ``INT64``, ``BYTES``...), and those onto numpy through :data:`V2_TO_NUMPY`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInput, PredictorFailed
from ..types import Tensor

V2_TO_NUMPY: dict[str, np.dtype[Any]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}
"""Open Inference Protocol datatype -> numpy dtype: the one dtype table."""
try:  # bfloat16 exists in numpy only through ml_dtypes (installed with TensorFlow/JAX)
    import ml_dtypes

    V2_TO_NUMPY["BF16"] = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on what is installed
    pass

FLOAT32, FLOAT64 = V2_TO_NUMPY["FP32"], V2_TO_NUMPY["FP64"]
FLOATS = (FLOAT32, FLOAT64)
"""float32 and float64 as dtypes: a comparison with one costs a third of a comparison with
``np.float64``, which numpy turns into a dtype each time (a hot path's few comparisons)."""

NUMPY_TO_V2: dict[np.dtype[Any], str] = {dtype: name for name, dtype in V2_TO_NUMPY.items()}

FLOAT_DATATYPES = ("FP16", "FP32", "FP64", "BF16")

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

TF_NAMES: dict[str, str] = {
    "BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32",
    "UINT64": "uint64", "INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
    "FP16": "half", "FP32": "float", "FP64": "double", "BF16": "bfloat16", "BYTES": "string",
}
"""V2 datatype -> TensorFlow's ``DataTypeString`` (what TF Serving's messages print)."""


def datatype_of(array: Tensor) -> str:
    """The V2 datatype name of *array* (strings and bytes are ``BYTES``)."""
    if array.dtype.kind in "USO":
        return "BYTES"
    try:
        return NUMPY_TO_V2[array.dtype]
    except KeyError:  # only a model's output can have another dtype: the server's failure
        raise PredictorFailed(f"the model returned an output of dtype {array.dtype}, which "
                              "this protocol cannot send")


def numpy_dtype(datatype: str, name: str) -> np.dtype[Any]:
    """The numpy dtype of V2 *datatype*; 400 naming input *name* for an unknown one."""
    dtype = V2_TO_NUMPY.get(datatype)
    if dtype is None:
        raise InvalidInput(f"input {name!r}: unsupported datatype {datatype!r}")
    return dtype


def int_range(dtype: np.dtype[Any]) -> tuple[int, int]:
    """The smallest and largest value of integer *dtype*."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def out_of_range(array: Tensor, dtype: np.dtype[Any]) -> bool:
    """Whether integer *array* holds a value integer *dtype* cannot (the one range check)."""
    if not array.size or array.dtype.kind not in "iu":
        return False
    low, high = int_range(dtype)
    return int(array.min()) < low or int(array.max()) > high
