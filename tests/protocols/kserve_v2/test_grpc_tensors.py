"""The Open Inference Protocol's protobuf tensors (flask_predict.protocols.kserve_v2.grpc_tensors):
a ``ModelInferRequest`` decodes into the arrays, and fails with the errors, that the same
request decodes into over REST."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from flask_predict import codecs
from flask_predict.errors import InvalidInput, PredictError
from flask_predict.grpc.messages import v2
from flask_predict.protocols.kserve_v2 import grpc_tensors as tensors
from flask_predict.protocols.kserve_v2.binary import array_to_binary
from flask_predict.protocols.kserve_v2.decoding import decode_full
from flask_predict.types import Limits, Signature
from tests.protocols.tensor_arrays import ARRAYS

V2_ARRAYS = [(a, codecs.datatype_of(a)) for a in ARRAYS if a.size]
ANY_INPUTS = Signature(inputs=(), outputs=())
"""A model that declares no inputs: each input is decoded as it was sent."""
LIMITS = Limits(max_inflate_ratio=100, max_json_depth=32, max_instances=1000,
                max_tensor_elements=10_000)


def over_grpc(request: Any, signature: Signature = ANY_INPUTS) -> dict[str, np.ndarray]:
    message = v2.ModelInferRequest.FromString(request.SerializeToString())  # as received
    return tensors.decode_request(message, "1", signature, LIMITS).request.inputs


def over_rest(header: dict[str, Any], binary: bytes = b"",
              signature: Signature = ANY_INPUTS) -> dict[str, np.ndarray]:
    header = json.loads(json.dumps(header))  # the JSON a client sends
    return decode_full(header, binary, "m", "1", signature, LIMITS).request.inputs


def json_data(array: np.ndarray) -> list[Any]:
    """*array*'s values as REST JSON ``data``: BYTES as ``{"b64": ...}``."""
    flat = array.reshape(-1).tolist()
    if array.dtype.kind == "O":
        return [{"b64": base64.b64encode(v).decode("ascii")} for v in flat]
    return flat


def same(got: np.ndarray, expected: np.ndarray, datatype: str) -> None:
    assert got.dtype == expected.dtype == codecs.V2_TO_NUMPY[datatype]
    assert got.shape == expected.shape
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("array,datatype", V2_ARRAYS, ids=[d for _, d in V2_ARRAYS])
def test_raw_contents_decode_as_binary_data_over_rest(array: np.ndarray,
                                                      datatype: str) -> None:
    """tritonclient.grpc's raw contents of every datatype (FP16, BOOL, BYTES included)
    decode to the array sent, as the binary tensor data extension's bytes do over REST."""
    sent = grpcclient.InferInput("x", list(array.shape), datatype)
    sent.set_data_from_numpy(array)
    request = v2.ModelInferRequest(inputs=[v2.ModelInferRequest.InferInputTensor.FromString(
        sent._get_tensor().SerializeToString())], raw_input_contents=[sent._get_content()])
    chunk = array_to_binary(array)
    rest = over_rest({"inputs": [{"name": "x", "datatype": datatype, "shape": list(array.shape),
                                  "parameters": {"binary_data_size": len(chunk)}}]}, chunk)
    same(over_grpc(request)["x"], rest["x"], datatype)
    assert over_grpc(request)["x"].tolist() == array.tolist()


TYPED = [(a, d) for a, d in V2_ARRAYS if d in tensors.V2_CONTENTS]


@pytest.mark.parametrize("array,datatype", TYPED, ids=[d for _, d in TYPED])
def test_typed_contents_decode_as_json_data_over_rest(array: np.ndarray, datatype: str) -> None:
    """Each datatype's typed field decodes to the array the same values make as JSON
    ``data`` over REST (FP16 has no typed field: see the errors below)."""
    request = v2.ModelInferRequest()
    tensor = request.inputs.add(name="x", datatype=datatype, shape=list(array.shape))
    getattr(tensor.contents, tensors.V2_CONTENTS[datatype]).extend(array.reshape(-1).tolist())
    rest = over_rest({"inputs": [{"name": "x", "datatype": datatype,
                                  "shape": list(array.shape), "data": json_data(array)}]})
    same(over_grpc(request)["x"], rest["x"], datatype)
    assert over_grpc(request)["x"].tolist() == array.tolist()


def test_several_inputs_are_fitted_to_the_model_as_over_rest() -> None:
    """Raw contents go to their inputs in order; an integer input is cast to the model's
    float input as over REST."""
    from flask_predict.types import TensorSpec

    signature = Signature(inputs=(TensorSpec("a", "FP64", (-1, 2)), TensorSpec("b", "INT64", (-1,))),
                          outputs=())
    a, b = np.array([[1, 2]], np.int32), np.array([7], np.int64)
    request = v2.ModelInferRequest(raw_input_contents=[a.tobytes(), b.tobytes()])
    request.inputs.add(name="a", datatype="INT32", shape=[1, 2])
    request.inputs.add(name="b", datatype="INT64", shape=[1])
    got = over_grpc(request, signature)
    rest = over_rest({"inputs": [{"name": "a", "datatype": "INT32", "shape": [1, 2], "data": [1, 2]},
                                 {"name": "b", "datatype": "INT64", "shape": [1], "data": [7]}]},
                     signature=signature)
    for name, datatype in (("a", "FP64"), ("b", "INT64")):
        same(got[name], rest[name], datatype)


def typed(name: str, datatype: str, shape: list[int], values: list[Any]) -> Any:
    request = v2.ModelInferRequest()
    tensor = request.inputs.add(name=name, datatype=datatype, shape=shape)
    field = tensors.V2_CONTENTS.get(datatype)
    if field is not None:
        getattr(tensor.contents, field).extend(values)
    return request


def raw(name: str, datatype: str, shape: list[int], chunk: bytes) -> Any:
    request = v2.ModelInferRequest(raw_input_contents=[chunk])
    request.inputs.add(name=name, datatype=datatype, shape=shape)
    return request


def rest_input(name: str, datatype: str, shape: list[int], values: list[Any]) -> dict[str, Any]:
    return {"inputs": [{"name": name, "datatype": datatype, "shape": shape, "data": values}]}


def rest_binary(name: str, datatype: str, shape: list[int], chunk: bytes
                ) -> tuple[dict[str, Any], bytes]:
    return {"inputs": [{"name": name, "datatype": datatype, "shape": shape,
                        "parameters": {"binary_data_size": len(chunk)}}]}, chunk


BAD = {
    "too few values": (typed("x", "FP32", [2, 2], [1.0, 2.0, 3.0]),
                       (rest_input("x", "FP32", [2, 2], [1.0, 2.0, 3.0]),)),
    "too many values": (typed("x", "INT64", [1], [1, 2]),
                        (rest_input("x", "INT64", [1], [1, 2]),)),
    "no values": (typed("x", "FP64", [3], []), (rest_input("x", "FP64", [3], []),)),
    "negative dimension": (typed("x", "FP64", [-1], [1.0]),
                           (rest_input("x", "FP64", [-1], [1.0]),)),
    "past the limits": (typed("x", "FP64", [100_000], [1.0]),
                        (rest_input("x", "FP64", [100_000], [1.0]),)),
    "unknown datatype": (typed("x", "FP8", [1], [1.0]), (rest_input("x", "FP8", [1], []),)),
    "INT8 out of range": (typed("x", "INT8", [2], [1, 300]),
                          (rest_input("x", "INT8", [2], [1, 300]),)),
    "UINT16 out of range": (typed("x", "UINT16", [1], [70_000]),
                            (rest_input("x", "UINT16", [1], [70_000]),)),
    "no name": (typed("", "FP64", [1], [1.0]), (rest_input("", "FP64", [1], [1.0]),)),
    "raw size": (raw("x", "FP64", [2], b"\0" * 8), rest_binary("x", "FP64", [2], b"\0" * 8)),
    "raw BOOL": (raw("x", "BOOL", [1], b"\2"), rest_binary("x", "BOOL", [1], b"\2")),
    "raw FP16 size": (raw("x", "FP16", [2], b"\0" * 2), rest_binary("x", "FP16", [2], b"\0" * 2)),
    "raw BYTES cut": (raw("x", "BYTES", [1], b"\5\0\0\0ab"),
                      rest_binary("x", "BYTES", [1], b"\5\0\0\0ab")),
    "raw BYTES short": (raw("x", "BYTES", [2], b"\1\0\0\0a"),
                        rest_binary("x", "BYTES", [2], b"\1\0\0\0a")),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_inputs_fail_as_over_rest(case: str) -> None:
    request, rest = BAD[case]
    with pytest.raises(PredictError) as over_rest_error:
        over_rest(*rest)
    with pytest.raises(PredictError) as over_grpc_error:
        over_grpc(request)
    assert (over_grpc_error.value.code, over_grpc_error.value.message) == \
        (over_rest_error.value.code, over_rest_error.value.message)


def test_a_repeated_input_fails_as_over_rest() -> None:
    request = typed("x", "FP64", [1], [1.0])
    request.inputs.add(name="x", datatype="FP64", shape=[1]).contents.fp64_contents.append(2.0)
    with pytest.raises(InvalidInput, match="input 'x' already exists in request"):
        over_grpc(request)


def test_grpc_only_mistakes_name_the_fields() -> None:
    request = v2.ModelInferRequest(raw_input_contents=[b"\x00" * 8])
    request.inputs.add(name="x", datatype="FP64", shape=[1]).contents.fp64_contents.append(1)
    with pytest.raises(InvalidInput, match="not both"):
        over_grpc(request)
    request.inputs.add(name="y", datatype="FP64", shape=[1])
    with pytest.raises(InvalidInput, match="raw_input_contents has 1 entries for 2 inputs"):
        over_grpc(request)
    with pytest.raises(InvalidInput, match="FP16 has no typed contents field"):
        over_grpc(typed("x", "FP16", [1], []))
    wrong = typed("x", "FP64", [1], [])
    wrong.inputs[0].contents.int_contents.append(1)
    with pytest.raises(InvalidInput, match="FP64 values go in contents.fp64_contents, got "
                                           "int_contents"):
        over_grpc(wrong)
    with pytest.raises(InvalidInput, match="non-empty list of tensors"):
        over_grpc(v2.ModelInferRequest())


OUTPUTS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "none": ([], {}),
    "names": ([{"name": "y"}, {"name": "p"}], {}),
    "twice": ([{"name": "y"}, {"name": "y"}], {}),
    "top classes": ([{"name": "y", "parameters": {"classification": 2}}], {}),
    "bad top classes": ([{"name": "y", "parameters": {"classification": 0}}], {}),
    "binary flags": ([{"name": "y", "parameters": {"binary_data": True}}],
                     {"binary_data_output": True}),
    "bad flag": ([{"name": "y"}], {"binary_data_output": 1}),
}


@pytest.mark.parametrize("case", list(OUTPUTS))
def test_requested_outputs_read_as_over_rest(case: str) -> None:
    """The usual request (names alone) is read without the REST form; every other one
    through it: the same names, options and errors either way."""
    outputs, parameters = OUTPUTS[case]
    request = raw("x", "FP64", [1], b"\0" * 8)
    for key, value in parameters.items():
        request.parameters[key].CopyFrom(v2.InferParameter(
            bool_param=value) if isinstance(value, bool) else v2.InferParameter(int64_param=value))
    for output in outputs:
        added = request.outputs.add(name=output["name"])
        for key, value in output.get("parameters", {}).items():
            if isinstance(value, bool):
                added.parameters[key].bool_param = value
            else:
                added.parameters[key].int64_param = value
    header: dict[str, Any] = {**rest_binary("x", "FP64", [1], b"\0" * 8)[0],
                              **({"outputs": outputs} if outputs else {}),
                              **({"parameters": parameters} if parameters else {})}
    message = v2.ModelInferRequest.FromString(request.SerializeToString())
    try:
        expected = decode_full(json.loads(json.dumps(header)), b"\0" * 8, "m", "1",
                               ANY_INPUTS, LIMITS)
    except PredictError as error:
        with pytest.raises(PredictError) as over_grpc_error:
            tensors.decode_request(message, "1", ANY_INPUTS, LIMITS)
        assert over_grpc_error.value.message == error.message
        return
    got = tensors.decode_request(message, "1", ANY_INPUTS, LIMITS)
    assert got.request.outputs == expected.request.outputs
    assert got.options == expected.options


def test_answers_carry_raw_contents() -> None:
    """Raw contents whatever the request sent, as Triton answers."""
    outputs = {"y": np.array([[1.5, 2.5]], np.float32), "s": np.array([b"a"], dtype=object)}
    answer = tensors.infer_response("m", "2", "id-1", outputs)
    assert (answer.model_name, answer.model_version, answer.id) == ("m", "2", "id-1")
    assert [(o.name, o.datatype, list(o.shape)) for o in answer.outputs] == \
        [("y", "FP32", [1, 2]), ("s", "BYTES", [1])]
    assert list(answer.raw_output_contents) == [array_to_binary(a) for a in outputs.values()]
    assert not answer.outputs[0].HasField("contents")
