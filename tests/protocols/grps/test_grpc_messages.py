"""grps's protobuf messages (flask_predict.protocols.grps.grpc_messages): a ``GrpsMessage``
decodes into the tensors, and fails with the errors, its JSON form decodes into over HTTP;
an answer is the message the HTTP answer's JSON parses into."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from flask_predict import codecs
from flask_predict.errors import PredictError
from flask_predict.grpc.messages import grps
from flask_predict.protocols.grps import grpc_messages, wire


def as_json(message: Any) -> dict[str, Any]:
    """*message* in protobuf's JSON form, as an HTTP client sends it."""
    body = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return dict(codecs.loads(codecs.dumps(body)))


def message_with(*tensors: dict[str, Any]) -> Any:
    message = grps.GrpsMessage(model="m")
    for tensor in tensors:
        message.gtensors.tensors.add(**tensor)
    return grps.GrpsMessage.FromString(message.SerializeToString())  # as received


TENSORS = {
    "uint8": {"dtype": 1, "shape": [2], "flat_uint8": [0, 255]},
    "int8": {"dtype": 2, "shape": [2], "flat_int8": [-128, 127]},
    "int16": {"dtype": 3, "shape": [1, 2], "flat_int16": [-32768, 7]},
    "int32": {"dtype": 4, "shape": [2], "flat_int32": [-2**31, 2**31 - 1]},
    "int64": {"dtype": 5, "shape": [2], "flat_int64": [-2**63, 2**63 - 1]},
    "float16": {"dtype": 6, "shape": [2], "flat_float16": [0.5, -65504.0]},
    "float32": {"dtype": 7, "shape": [3], "flat_float32": [0.1, float("nan"), -float("inf")]},
    "float64": {"dtype": 8, "shape": [2, 1], "flat_float64": [1e300, float("inf")]},
    "string": {"dtype": 9, "shape": [2], "flat_string": ["a", "\u00e9"]},
    "empty": {"dtype": 7, "shape": [0, 3]},
}


@pytest.mark.parametrize("case", list(TENSORS))
def test_tensors_decode_as_their_json_does(case: str) -> None:
    message = message_with({"name": "x", **TENSORS[case]})
    got = grpc_messages.to_request(message)
    expected = wire.decode_message(as_json(message))
    assert (got.model, got.kind) == (expected.model, expected.kind) == ("m", "gtensors")
    (name, array), = got.value
    (_, want), = expected.value
    assert name == "x" and array.dtype == want.dtype and array.shape == want.shape
    np.testing.assert_array_equal(array, want)


BAD = {
    "no dtype": {"shape": [1], "flat_float32": [1.0]},
    "unknown dtype": {"dtype": 42, "shape": [1], "flat_float32": [1.0]},
    "empty data": {"dtype": 7, "shape": [2]},
    "too few": {"dtype": 8, "shape": [3], "flat_float64": [1.0, 2.0]},
    "int8 range": {"dtype": 2, "shape": [1], "flat_int8": [300]},
    "uint8 range": {"dtype": 1, "shape": [1], "flat_uint8": [256]},
    "float16 range": {"dtype": 6, "shape": [1], "flat_float16": [1e6]},
    "empty int8": {"dtype": 2, "shape": [0]},
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_tensors_fail_as_their_json_does(case: str) -> None:
    message = message_with(BAD[case])
    with pytest.raises(PredictError) as from_json:
        wire.decode_message(as_json(message))
    with pytest.raises(PredictError) as from_message:
        grpc_messages.to_request(message)
    assert (from_message.value.code, from_message.value.message) == \
        (from_json.value.code, from_json.value.message)


def test_names_are_checked_as_over_http() -> None:
    for tensors, error in (([{"name": "a"}, {}], "all set or all empty"),
                           ([{"name": "a"}, {"name": "a"}], "unique")):
        message = message_with(*({"dtype": 7, "shape": [1], "flat_float32": [1.0], **t}
                                 for t in tensors))
        with pytest.raises(PredictError, match=error):
            grpc_messages.to_request(message)


OUTPUTS = [
    {"predict_proba": np.array([[0.1, 0.9]]), "label": np.array([1, 0], np.int64)},
    {"b": np.array([True, False]), "u32": np.array([2**32 - 1], np.uint32),
     "u64": np.array([5], np.uint64), "h": np.array([0.5, np.nan], np.float16)},
    {"f": np.array([0.1, np.inf, -np.inf, np.nan], np.float32), "d": np.array(2.5)},
    {"s": np.array([b"a", "\u00e9", b"\xff"], dtype=object), "z": np.zeros((0, 2))},
    [("", np.array([[1.5]], np.float32)), ("", np.array([7], np.int8))],
    {},
]


@pytest.mark.parametrize("outputs", OUTPUTS)
def test_answers_are_the_message_their_json_parses_into(outputs: Any) -> None:
    body = wire.message("gtensors", wire.encode_gtensors(outputs))
    expected = json_format.ParseDict(codecs.loads(codecs.dumps(body)), grps.GrpsMessage())
    got = grpc_messages.answer("outputs", outputs)
    assert got.SerializeToString(deterministic=True) == \
        expected.SerializeToString(deterministic=True)


def test_other_answers_are_their_json_too() -> None:
    for kind, value in (("str_data", "text"), ("bin_data", b"\x00\x01"),
                        ("gmap", {"s_s": {"k": "v"}, "s_i64": {"n": "7"}, "s_f": {"x": 0.1}})):
        expected = json_format.ParseDict(codecs.loads(codecs.dumps(wire.message(kind, value))),
                                         grps.GrpsMessage())
        assert grpc_messages.answer(kind, value) == expected
    failed = json_format.ParseDict(wire.error_body(404, "gone"), grps.GrpsMessage())
    assert grpc_messages.failure(404, "gone") == failed
