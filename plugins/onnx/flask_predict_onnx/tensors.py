"""ONNX types and a request's arrays as ONNX Runtime takes them.

ONNX Runtime names a tensor's element type ``tensor(float)``; metadata speaks V2's names
(``FP32``). A request's array becomes the declared type where numpy casts it within its
kind (float64 to float, int64 to int32), text becomes ``str``, and a column (``[N]``) fills
an input declared ``[N, 1]``, as a converted DataFrame pipeline declares each column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flask_predict.plugin import InvalidInput, Tensor, TensorSpec, check_shape

ONNX_TO_V2 = {
    "tensor(bool)": "BOOL", "tensor(uint8)": "UINT8", "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32", "tensor(uint64)": "UINT64", "tensor(int8)": "INT8",
    "tensor(int16)": "INT16", "tensor(int32)": "INT32", "tensor(int64)": "INT64",
    "tensor(float16)": "FP16", "tensor(float)": "FP32", "tensor(double)": "FP64",
    "tensor(string)": "BYTES",
}
"""Every ONNX tensor type the protocols carry -> its V2 name."""
V2_TO_DTYPE = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
               "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
               "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
MAPS = "FP32"
"""What a sequence of maps (skl2onnx's ZipMap of class probabilities) is answered as: one
row of values per map, in its keys' order."""


def spec(node: Any) -> TensorSpec:
    """An ONNX Runtime ``NodeArg`` as a signature's tensor: its type, and its shape with
    every named or unknown dimension ``-1``."""
    if node.type.startswith("seq(map("):
        return TensorSpec(node.name, MAPS, (-1, -1))
    datatype = ONNX_TO_V2.get(node.type)
    if datatype is None:
        raise TypeError(f"input or output {node.name!r} is a {node.type}, which no protocol "
                        "carries")
    shape = None if node.shape is None else tuple(
        size if isinstance(size, int) and size >= 0 else -1 for size in node.shape)
    return TensorSpec(node.name, datatype, shape)


def feed(array: Tensor, want: TensorSpec) -> Tensor:
    """*array* as the input *want* declares: its type, a column reshaped to ``[N, 1]``;
    :class:`InvalidInput` when it cannot be."""
    if (want.shape is not None and len(want.shape) == 2 and want.shape[1] == 1
            and array.ndim == 1):
        array = array.reshape(-1, 1)
    check_shape(array, want)
    if want.datatype == "BYTES":
        if array.dtype.kind not in "OSU":
            raise InvalidInput(f"input {want.name!r}: expected text, got numbers")
        return np.array([_text(value, want.name) for value in array.reshape(-1).tolist()],
                        dtype=object).reshape(array.shape)
    dtype = np.dtype(V2_TO_DTYPE[want.datatype])
    if array.dtype.kind in "OSU" or not np.can_cast(array.dtype, dtype, "same_kind"):
        raise InvalidInput(f"input {want.name!r}: expected {want.datatype}, got "
                           f"{'text' if array.dtype.kind in 'OSU' else array.dtype.name}")
    return np.ascontiguousarray(array, dtype=dtype)


def answer(value: Any) -> Tensor:
    """An output as ONNX Runtime gives it, as an array: a sequence of maps as rows."""
    if isinstance(value, list):
        if not value:
            return np.empty((0, 0), dtype=np.float32)
        keys = list(value[0])
        return np.array([[row[key] for key in keys] for row in value], dtype=np.float32)
    return np.asarray(value)


def _text(value: Any, name: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"input {name!r}: a value is not UTF-8 text")
    if isinstance(value, str):
        return value
    raise InvalidInput(f"input {name!r}: expected text, got "
                       f"{'a missing value (null)' if value is None else type(value).__name__}")
