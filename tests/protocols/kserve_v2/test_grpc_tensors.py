"""The Open Inference Protocol's protobuf tensors (flask_predict.protocols.kserve_v2.grpc_tensors)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from flask_predict import codecs
from flask_predict.errors import InvalidInput
from flask_predict.grpc.messages import v2
from flask_predict.protocols.kserve_v2 import decoding
from flask_predict.protocols.kserve_v2 import grpc_tensors as tensors
from tests.protocols.tensor_arrays import ARRAYS

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
        decoded = decoding.decode_inputs(objects, binary)["x"]
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
