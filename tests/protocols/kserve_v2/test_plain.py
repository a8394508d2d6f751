"""The plain path answers exactly what the full V2 decode answers, or leaves the body to it.

Every conformance case's body and a set of variants around the usual one-input body are
decoded both ways, for a float64 and a float32 model: where ``decode_plain`` answers, its
answer equals ``decode_infer``'s bit for bit; where ``decode_infer`` refuses the body,
``decode_plain`` leaves it (``None``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict import codecs
from flask_predict.errors import PredictError
from flask_predict.protocols.kserve_v2 import plain, wire
from flask_predict.types import Limits, Signature, TensorSpec

LIMITS = Limits(max_inflate_ratio=100, max_json_depth=64, max_instances=8,
                max_tensor_elements=32)
SIGNATURES = {datatype: Signature(inputs=(TensorSpec("features", datatype, (-1, 4)),),
                                  outputs=(TensorSpec("predict", "INT64", (-1,)),))
              for datatype in ("FP64", "FP32")}
USUAL = {"inputs": [{"name": "input-0", "shape": [2, 4], "datatype": "FP64",
                     "data": [0.5, 1, -2.25, 3e-7, 4, 5.5, 6, 7]}],
         "outputs": [{"name": "predict"}], "id": "r1"}


def variant(**changes: Any) -> dict[str, Any]:
    """The usual body with its input's keys (or, for keys named ``top_*``, the body's)
    changed; a value of ``...`` removes the key."""
    body = json.loads(json.dumps(USUAL))
    for key, value in changes.items():
        where, key = (body, key[4:]) if key.startswith("top_") else (body["inputs"][0], key)
        if value is ...:
            del where[key]
        else:
            where[key] = value
    return body


VARIANTS = [
    USUAL, variant(top_outputs=...), variant(top_id=...), variant(top_outputs=[]),
    variant(top_outputs=[{"name": "predict"}, {"name": "predict_proba"}]),
    variant(data=[1, 2, 3, 4, 5, 6, 7, 8]), variant(data=[2 ** 63, 1, 2, 3, 4, 5, 6, 7]),
    variant(data=[10 ** 30, 1, 2, 3, 4, 5, 6, 7]), variant(data=[1e300, 1, 2, 3, 4, 5, 6, 7]),
    variant(data=[None, 1, 2, 3, 4, 5, 6, 7]), variant(data=["1", 1, 2, 3, 4, 5, 6, 7]),
    variant(data=[True, 1, 2, 3, 4, 5, 6, 7]), variant(data=[[1, 2, 3, 4], [5, 6, 7, 8]]),
    variant(data=[1, [2], 3, 4, 5, 6, 7, 8]), variant(data=[1, {"a": 2}, 3, 4, 5, 6, 7, 8]),
    variant(data=[1, 2, 3]), variant(data=[]), variant(data="1,2"),
    variant(shape=[8]), variant(shape=[2, 2, 2]), variant(shape=[4, 2]), variant(shape=[2, -4]),
    variant(shape=[2, 4.0]), variant(shape=[True, 8]), variant(shape=[9, 4], data=[1.5] * 36),
    variant(shape=[1, 4], data=[1.5] * 4), variant(shape="2,4"), variant(shape=...),
    variant(datatype="FP32"), variant(datatype="INT64"), variant(datatype="fp64"),
    variant(datatype=...), variant(name=""), variant(name=7), variant(name=...),
    variant(parameters={}), variant(parameters={"binary_data_size": 64}),
    variant(top_parameters={}), variant(top_parameters={"binary_data_output": True}),
    variant(top_id=7), variant(top_id="true"), variant(top_extra=[1]),
    variant(top_outputs=[{"name": "predict", "parameters": {"binary_data": True}}]),
    variant(top_outputs=[{"name": "predict"}, {"name": "predict"}]),
    variant(top_outputs=[{"name": 1}]), variant(top_outputs={"name": "predict"}),
    variant(top_outputs=["predict"]),
    variant(top_inputs=USUAL["inputs"] * 2), variant(top_inputs=[]), variant(top_inputs=None),
    [USUAL], "body",
]


def bodies() -> list[tuple[str, bytes]]:
    cases = sorted((Path(__file__).parent / "cases").glob("*.request.json"))
    found = [(case.name.split(".")[0], json.loads(case.read_text())) for case in cases]
    sent = [(name, sent["raw"].encode() if "raw" in sent else json.dumps(sent["body"]).encode())
            for name, sent in found if "/infer" in sent["path"]]
    return sent + [(f"variant {index}", json.dumps(body).encode())
                   for index, body in enumerate(VARIANTS)]


def assert_same(got: wire.DecodedInfer, want: wire.DecodedInfer) -> None:
    assert (got.request_id, got.options) == (want.request_id, want.options)
    mine, theirs = got.request, want.request
    assert (mine.model, mine.version, mine.label, mine.outputs, mine.signature,
            mine.parameters) == (theirs.model, theirs.version, theirs.label, theirs.outputs,
                                 theirs.signature, theirs.parameters)
    assert list(mine.inputs) == list(theirs.inputs)
    for name, array in mine.inputs.items():
        other = theirs.inputs[name]
        assert (array.dtype, array.shape) == (other.dtype, other.shape)
        assert array.tobytes() == other.tobytes()


def check_both(text: bytes, signature: Signature) -> None:
    """Decode *text* both ways, as a small body and padded into a large one (whose float
    data the parser reads into an array): the same answer, or the plain path leaves it."""
    check_parsed(text, codecs.loads(text), signature)
    padded = text + b" " * codecs.parsing.SMALL_BODY
    check_parsed(padded, codecs.loads_v2_infer(padded), signature)


def check_parsed(text: bytes, header: Any, signature: Signature) -> None:
    args = (header, b"", "m", "3", signature, LIMITS)
    got = plain.decode_plain(text, *args)
    try:
        want = wire.decode_infer(*args)
    except PredictError:
        assert got is None
        return
    if got is not None:
        assert_same(got, want)


@pytest.mark.parametrize("datatype", SIGNATURES)
@pytest.mark.parametrize("name, text", bodies(), ids=[name for name, _ in bodies()])
def test_plain_answers_as_the_full_decode(name: str, text: bytes, datatype: str) -> None:
    try:
        codecs.loads(text)
    except PredictError:  # refused before either decode
        return
    check_both(text, SIGNATURES[datatype])


@pytest.mark.parametrize("datatype", SIGNATURES)
def test_the_usual_body_takes_the_plain_path(datatype: str) -> None:
    """The usual bodies are answered here, not left: for the float64 and float32 models,
    with and without outputs and id, numbers whole or not."""
    for body in (variant(datatype=datatype), variant(datatype=datatype, top_outputs=...),
                 variant(datatype=datatype, top_id=...),
                 variant(datatype=datatype, data=list(range(8)))):
        text = json.dumps(body).encode()
        padded = text + b" " * codecs.parsing.SMALL_BODY  # data read into an array
        for sent, header in ((text, codecs.loads(text)), (padded, codecs.loads_v2_infer(padded))):
            args = (header, b"", "m", "3", SIGNATURES[datatype], LIMITS)
            got = plain.decode_plain(sent, *args)
            assert got is not None
            assert_same(got, wire.decode_infer(*args))


def test_plain_leaves_bodies_it_cannot_be_sure_of() -> None:
    """Binary data after the JSON, booleans anywhere in the text, a model of two inputs."""
    text = json.dumps(USUAL).encode()
    header, signature = codecs.loads(text), SIGNATURES["FP64"]
    assert plain.decode_plain(text, header, b"\0", "m", "3", signature, LIMITS) is None
    assert plain.decode_plain(text + b' ,"x":true', header, b"", "m", "3", signature,
                              LIMITS) is None
    two = Signature(inputs=signature.inputs * 2, outputs=signature.outputs)
    assert plain.decode_plain(text, header, b"", "m", "3", two, LIMITS) is None


def test_random_bodies_answer_as_the_full_decode() -> None:
    """Random numbers, shapes and output lists of the usual form, including integers,
    values past float32's range and nulls."""
    rng = np.random.default_rng(7)
    pool: list[Any] = [0.5, -3, 2 ** 40, 1e39, -1e-45, None, 7.25e-300, 0]
    for _ in range(300):
        rows = int(rng.integers(0, 10))
        data = [pool[i] if rng.random() < 0.2 else float(rng.normal())
                for i in rng.integers(0, len(pool), rows * 4)]
        body = variant(shape=[rows, 4], data=data, datatype=str(rng.choice(["FP32", "FP64"])))
        if rng.random() < 0.3:
            body["outputs"] = [{"name": name} for name in rng.choice(
                ["predict", "predict_proba", "other"], int(rng.integers(0, 3)), replace=False)]
        text = json.dumps(body).encode()
        for signature in SIGNATURES.values():
            check_both(text, signature)
