"""Protobuf tensors <-> numpy (flask_predict.grpc.tensors)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from flask_predict import codecs
from flask_predict.errors import InvalidInput
from flask_predict.grpc import tensors
from flask_predict.grpc.messages import tf, tfs, v2
from flask_predict.protocols.kserve_v2 import wire

ARRAYS = [np.array([[1.5, -2.0]], np.float32), np.array([1e300, -0.0]), np.array([[7]], np.int32),
          np.array([-3, 100], np.int16), np.array([-128, 127], np.int8),
          np.array([0, 255], np.uint8), np.array([65535], np.uint16),
          np.array([2**63 - 1, -2**63], np.int64), np.array([2**32 - 1], np.uint32),
          np.array([2**64 - 1], np.uint64), np.array([True, False]),
          np.array([0.5, -65504], np.float16),
          np.array([[b"a", b"\x00\xff"]], dtype=object), np.zeros((0, 3), np.float32)]


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


V2_ARRAYS = [(a, codecs.datatype_of(a)) for a in ARRAYS if a.size]


@pytest.mark.parametrize("array,datatype", V2_ARRAYS, ids=[d for _, d in V2_ARRAYS])
def test_v2_inputs_from_tritonclient_decode_as_over_rest(array: np.ndarray,
                                                         datatype: str) -> None:
    """tritonclient.grpc's raw contents, and typed contents where the datatype has a
    field, decode through the REST decoder to the array that was sent."""
    sent = grpcclient.InferInput("x", list(array.shape), datatype)
    sent.set_data_from_numpy(array)
    request = v2.ModelInferRequest(inputs=[v2.ModelInferRequest.InferInputTensor.FromString(
        sent._get_tensor().SerializeToString())], raw_input_contents=[sent._get_content()])
    forms = [request]
    field = tensors.V2_CONTENTS.get(datatype)
    if field is not None:
        typed = v2.ModelInferRequest()
        tensor = typed.inputs.add(name="x", datatype=datatype, shape=list(array.shape))
        getattr(tensor.contents, field).extend(array.reshape(-1).tolist())
        forms.append(typed)
    for form in forms:
        objects, binary = tensors.v2_request_inputs(form)
        decoded = wire.decode_inputs(objects, binary)["x"]
        assert decoded.dtype == codecs.V2_TO_NUMPY[datatype]
        assert decoded.tolist() == array.tolist()


def test_v2_outputs_are_typed_or_raw() -> None:
    answer = v2.ModelInferResponse()
    tensors.to_v2_output(np.array([[1.5, 2.5]], np.float32), answer.outputs.add(name="y"), None)
    raw: list[bytes] = []
    tensors.to_v2_output(np.array([b"a"], dtype=object), answer.outputs.add(name="s"), raw)
    assert list(answer.outputs[0].contents.fp32_contents) == [1.5, 2.5]
    assert list(answer.outputs[0].shape) == [1, 2]
    assert raw == [b"\x01\x00\x00\x00a"] and answer.outputs[1].datatype == "BYTES"
    assert tensors.needs_raw([np.zeros(1, np.float16)])
    assert not tensors.needs_raw([np.zeros(1, np.float64)])


def test_v2_raw_and_typed_contents_do_not_mix() -> None:
    request = v2.ModelInferRequest(raw_input_contents=[b"\x00" * 8])
    request.inputs.add(name="x", datatype="FP64", shape=[1]).contents.fp64_contents.append(1)
    with pytest.raises(InvalidInput, match="not both"):
        tensors.v2_request_inputs(request)
    request.inputs.add(name="y", datatype="FP64", shape=[1])
    with pytest.raises(InvalidInput, match="raw_input_contents has 1 entries for 2 inputs"):
        tensors.v2_request_inputs(request)
