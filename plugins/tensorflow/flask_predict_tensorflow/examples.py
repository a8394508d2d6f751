"""``tf.train.Example`` protos from plain features, as TF Serving builds them from JSON."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from flask_predict.plugin import Example, Tensor


def to_example(features: Example) -> tf.train.Example:
    """One Example: float32 arrays -> ``float_list``, integers -> ``int64_list``, bytes ->
    ``bytes_list``."""
    feature = {}
    for name, values in features.items():
        kind = values.dtype.kind
        if kind == "f":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif kind in "biu":
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v if isinstance(v, bytes) else str(v).encode("utf-8") for v in values]))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def serialize_examples(examples: Sequence[Example]) -> Tensor:
    """A 1-D object array of serialized Examples: what a classify/regress ``inputs`` takes."""
    out = np.empty(len(examples), dtype=object)
    out[:] = [to_example(example).SerializeToString() for example in examples]
    return out
