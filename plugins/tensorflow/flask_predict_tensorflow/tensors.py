"""Numpy values fitted to TensorFlow dtypes, TensorFlow dtypes named as V2 datatypes, and
TensorFlow's errors told apart: what the SavedModel and Keras predictors share."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from flask_predict.plugin import NUMPY_TO_V2, InvalidInput, Tensor, past_range

OP_ERRORS_400 = (tf.errors.InvalidArgumentError, tf.errors.FailedPreconditionError,
                 tf.errors.OutOfRangeError)
"""TensorFlow errors TF Serving answers with 400; the rest become 500."""


def fit_value(name: str, dtype: tf.DType, value: Tensor) -> Tensor:
    """*value* in *dtype* (strings stay Python bytes), for the input called *name*.

    A cast that would change a value is refused (400), never made: fractions for an
    integer, an integer past its range, a double past float's range, strings for numbers.
    """
    dtype = dtype.base_dtype
    if dtype == tf.string:
        if value.dtype.kind == "U":
            encoded: Tensor = np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(value)
            return encoded
        if value.dtype.kind not in "OS":
            raise InvalidInput(f"input {name}: expected strings")
        return value
    if value.dtype.kind in "OSU":
        raise InvalidInput(f"input {name}: expected {dtype.name} values, got strings")
    target = np.dtype(dtype.as_numpy_dtype)
    if value.dtype != target:
        if not np.can_cast(value.dtype, target, "same_kind"):  # fractions for integers
            raise InvalidInput(f"input {name}: expected {dtype.name} values, got "
                               f"{value.dtype.name}")
        if past_range(value, target):
            raise InvalidInput(f"input {name}: a value is out of range for {dtype.name}")
    return value.astype(target, copy=False)


def datatype(dtype_enum: int) -> str:
    """The V2 datatype name of a TensorFlow ``DataType`` enum (ref types as their base)."""
    try:
        dtype = tf.dtypes.as_dtype(dtype_enum).base_dtype
    except TypeError:
        return "BYTES"
    if dtype == tf.string:
        return "BYTES"
    try:
        return NUMPY_TO_V2.get(np.dtype(dtype.as_numpy_dtype), "BYTES")
    except TypeError:
        return "BYTES"


def first_line(message: str) -> str:
    """The line of a TensorFlow error that says what went wrong (not where)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("[[", "Graph execution error",
                                                              "Detected at node", "Node:"))]
    return (useful or lines or ["TensorFlow error"])[0]
