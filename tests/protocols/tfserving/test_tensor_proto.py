"""TensorFlow's protobuf values <-> numpy (flask_predict.protocols.tfserving.tensor_proto)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from flask_predict.errors import InvalidInput
from flask_predict.grpc.messages import tf, tfs
from flask_predict.protocols.tfserving import tensor_proto as tensors
from tests.protocols.tensor_arrays import ARRAYS


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_tensor_proto_round_trip(array: np.ndarray) -> None:
    proto = tf.TensorProto()
    tensors.to_tensor_proto(array, proto)
    assert not proto.tensor_content  # values in the typed field, as TF Serving answers
    back = tensors.from_tensor_proto(tf.TensorProto.FromString(proto.SerializeToString()), "x")
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tolist() == array.tolist()


def test_tensor_proto_reads_content_bytes_and_pads_with_the_last_value() -> None:
    proto = tf.TensorProto(dtype=1)  # DT_FLOAT
    proto.tensor_shape.dim.add().size = 2
    proto.tensor_shape.dim.add().size = 2
    proto.tensor_content = np.array([1, 2, 3, 4], "<f4").tobytes()
    assert tensors.from_tensor_proto(proto, "x").tolist() == [[1, 2], [3, 4]]
    proto.tensor_content = b""
    proto.float_val.extend([5.0, 6.0])
    assert tensors.from_tensor_proto(proto, "x").tolist() == [[5, 6], [6, 6]]
    del proto.float_val[:]
    assert tensors.from_tensor_proto(proto, "x").tolist() == [[0, 0], [0, 0]]


@pytest.mark.parametrize("change,message", [
    (lambda p: setattr(p, "dtype", 8), "dtype DT_COMPLEX64 is not supported"),
    (lambda p: p.float_val.extend([1.0, 2.0, 3.0]), "3 values for shape [2]"),
    (lambda p: setattr(p, "tensor_content", b"\x00" * 3), "tensor_content holds 3 bytes"),
    (lambda p: setattr(p.tensor_shape.dim[0], "size", -1), "negative dimension"),
    (lambda p: (setattr(p, "dtype", 4), p.int_val.append(300)), "out of range for DT_UINT8"),
])
def test_tensor_proto_errors_name_the_input(change: Any, message: str) -> None:
    proto = tf.TensorProto(dtype=1)
    proto.tensor_shape.dim.add().size = 2
    change(proto)
    with pytest.raises(InvalidInput) as caught:
        tensors.from_tensor_proto(proto, "x")
    assert caught.value.message.startswith("tensor parsing error: x")
    assert message in caught.value.message


def test_examples_merge_over_the_context() -> None:
    proto = tfs.Input()
    context = proto.example_list_with_context.context.features.feature
    context["x"].float_list.value.append(1.0)
    context["c"].bytes_list.value.append(b"ctx")
    example = proto.example_list_with_context.examples.add().features.feature
    example["x"].float_list.value.append(2.0)
    example["n"].int64_list.value.extend([3, 4])
    (merged,) = tensors.from_input(proto)
    assert merged["x"].tolist() == [2.0] and merged["x"].dtype == np.float32
    assert merged["n"].tolist() == [3, 4] and merged["c"].tolist() == [b"ctx"]
    with pytest.raises(InvalidInput, match="Input is empty"):
        tensors.from_input(tfs.Input())
