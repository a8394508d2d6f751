"""The numeric-matrix accelerator: same answers as the general JSON path, or no answer."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from flask import Flask

from flask_predict import codecs
from flask_predict.codecs import parsing
from flask_predict.types import Signature, TensorSpec

MATRIX_BODIES = [
    b'{"instances": [[1, 2.5], [3, -4e-3]]}',
    b'{"instances":[[0.1,0.2,0.30000000000000004]]}',
    b'  {"instances" : [ [ -0.0 , 1E2 ] ] }\n',
    b'{"instances": [[1, 2], [3, 4]]}',                      # integers
    b'{"instances": [[9007199254740991, 1.5]]}',              # 2**53 - 1
    b'{"instances": [[1e15, 5e-324, 2.2250738585072014e-308]]}',
    b'{"instances": [[1.5e+3, -2E-2], [7, 0]]}',             # exponents with signs
    b'{"instances": [[1000000000000000.5, 0.12345678901234567890]]}',  # 16 digits and more
    b'{"instances": [[-9007199254740991.0]]}',
]

OTHER_BODIES = [
    b'{"instances": [[1, 2]], "signature_name": "x"}',        # another key
    b'{"instances": [[1, 2], [3]]}',                           # ragged
    b'{"instances": [[1, 2], [3, [4]]]}',                      # nested
    b'{"instances": [[1, [2]], 3]}',                           # nested, mixed
    b'{"instances": [[1, 2], [3, 4], [5, 6, 7], [8]]}',        # ragged, same count
    b'{"instances": [[1, [2]], "ab"]}',                        # a string row of 2 letters
    b'{"instances": [[1, [2]], {"a": 1, "b": 2}]}',            # an object row of 2 keys
    b'{"instances": [[1, []], [3, 4]]}',                       # an empty nested array
    b'{"instances": [[1, 2], [3, null]]}',                     # null
    b'{"instances": [[1, true]]}',                             # boolean
    b'{"instances": [[1, "2"]]}',                              # string
    b'{"instances": [[NaN, 2]]}',                              # non-standard token
    b'{"instances": [[9007199254740993, 1]]}',                 # 2**53 + 1
    b'{"instances": [[18446744073709551616]]}',                # over 64 bits
    b'{"instances": [[1e300]]}',                               # large: left to to_array
    b'{"instances": [[9007199254740993.0]]}',                  # a float from 2**53 on
    b'{"instances": [[1, -90071992547409930]]}',               # an integer far past it
    b'{"instances": [[[1, 2]]]}',                              # three levels
    b'{"instances": [[1, 2]], "": 1}',                         # an empty second key
    b'{"instances": [[1, 2]], "x": [[3]]}',
    b'{"instances": [1, 2, 3]}',                               # one value per instance
    b'{"instances": [[], []]}',                                # no columns
    b'{"instances": []}',
    b'{"instances": {"a": [1]}}',
    b'{"instances": [[1, 2]], "instances": "x"}',              # duplicate key
    b'{"instances": [[1, 2]]} trailing',
    b'[[1, 2]]',
    b'',
    b'not json',
]


# as they are (small: read by orjson), and padded with spaces past codecs.SMALL_BODY (simdjson)
PADDING = pytest.mark.parametrize("pad", [0, parsing.SMALL_BODY + 1], ids=["small", "large"])


@PADDING
@pytest.mark.parametrize("body", MATRIX_BODIES)
def test_matrix_equals_the_general_path(body: bytes, pad: int) -> None:
    matrix = codecs.number_matrix(body + b" " * pad, "instances")
    assert matrix is not None
    expected = codecs.to_array(codecs.loads(body)["instances"], "FP64", "instances")
    assert matrix.dtype == np.float64 and expected.dtype == np.float64
    assert matrix.shape == expected.shape
    assert matrix.tobytes() == expected.tobytes()  # bit for bit, -0.0 included


@PADDING
@pytest.mark.parametrize("body", OTHER_BODIES)
def test_matrix_leaves_other_bodies_to_the_general_path(body: bytes, pad: int) -> None:
    assert codecs.number_matrix(body + b" " * pad, "instances") is None


@pytest.mark.parametrize("body", [
    b'{"instanc\\u0065s": [[1, 2]]}',                        # an escaped key
    b'{"inst\\"ances": [[1, 2]]}',
    b'{"instances": [[1, 2]]}'.replace(b" ", b"\t"),
    b'{"instances":[[1,2]],"instances":[[3,4]]}',
])
def test_matrix_answers_as_the_general_path_or_not_at_all(body: bytes) -> None:
    matrix = codecs.number_matrix(body, "instances")
    if matrix is not None:
        expected = codecs.to_array(codecs.loads(body)["instances"], "FP64", "instances")
        assert matrix.tobytes() == expected.tobytes() and matrix.shape == expected.shape


@pytest.mark.parametrize("key", ["instances", "x1 2", "e+E", "k\"ey", "\\", "\u00e9"])
def test_matrix_reads_only_its_key(key: str) -> None:
    body = json.dumps({key: [[1, 2.5e3]]}, ensure_ascii=False).encode()
    matrix = codecs.number_matrix(body, key)
    assert matrix is None or matrix.tolist() == [[1.0, 2500.0]]
    assert codecs.number_matrix(body, key + "x") is None
    assert codecs.number_matrix(json.dumps({key: [[1, True]]}).encode(), key) is None


def test_matrix_to_tensors_needs_one_float_input() -> None:
    matrix = np.array([[1.0, 2.5]])
    fp32 = Signature(inputs=(TensorSpec("x", "FP32", (-1, 2)),), outputs=())
    tensors = codecs.matrix_to_tensors(matrix, fp32)
    assert tensors is not None
    assert tensors["x"].dtype == np.float32
    np.testing.assert_array_equal(tensors["x"], codecs.rows_to_tensors([[1.0, 2.5]], fp32)["x"])
    int64 = Signature(inputs=(TensorSpec("x", "INT64", (-1, 2)),), outputs=())
    assert codecs.matrix_to_tensors(matrix, int64) is None
    two = Signature(inputs=(TensorSpec("a", "FP32", None), TensorSpec("b", "FP32", None)),
                    outputs=())
    assert codecs.matrix_to_tensors(matrix, two) is None


@pytest.mark.parametrize("body", MATRIX_BODIES)
def test_matrix_to_tensors_fp64_is_what_the_rows_make(body: bytes) -> None:
    matrix = codecs.number_matrix(body, "instances")
    assert matrix is not None
    fp64 = Signature(inputs=(TensorSpec("x", "FP64", None),), outputs=())
    tensors = codecs.matrix_to_tensors(matrix, fp64)
    assert tensors is not None and tensors["x"] is matrix  # no copy
    expected = codecs.rows_to_tensors(codecs.loads(body)["instances"], fp64)["x"]
    assert expected.dtype == np.float64 and expected.tobytes() == matrix.tobytes()


def _rows(n: int, width: int) -> list[list[float]]:
    values = np.random.default_rng(n).normal(size=(n, width))
    return [[float(f"{v:.6f}") for v in row] for row in values]


@pytest.mark.parametrize("model, width", [("iris", 4), ("xgb", 4)])
@pytest.mark.parametrize("rows", [1, 100, 2000])
def test_route_answers_as_the_general_path(app: Flask, monkeypatch: pytest.MonkeyPatch,
                                           model: str, width: int, rows: int) -> None:
    body = json.dumps({"instances": _rows(rows, width)})
    path = f"/v1/projects/p/models/{model}:predict"
    fast = app.test_client().post(path, data=body, content_type="application/json")
    assert codecs.number_matrix(body.encode(), "instances") is not None
    monkeypatch.setattr(codecs, "number_matrix", lambda body, key: None)
    general = app.test_client().post(path, data=body, content_type="application/json")
    assert fast.status_code == general.status_code == 200
    assert fast.data == general.data
    assert len(fast.get_json()["predictions"]) == rows


@pytest.mark.parametrize("body, status", [
    ({"instances": [[1, 2, 3]]}, 400),                   # wrong width: the plugin's check
    ({"instances": [[1, 2, 3, 4, 5]]}, 400),
])
def test_route_errors_as_the_general_path(app: Flask, monkeypatch: pytest.MonkeyPatch,
                                          body: Any, status: int) -> None:
    for model in ("iris", "xgb"):
        path = f"/v1/projects/p/models/{model}:predict"
        fast = app.test_client().post(path, json=body)
        with monkeypatch.context() as patched:
            patched.setattr(codecs, "number_matrix", lambda body, key: None)
            general = app.test_client().post(path, json=body)
        assert fast.status_code == general.status_code == status
        assert fast.get_json() == general.get_json()


def test_unknown_model_is_404_on_both_paths(app: Flask) -> None:
    got = app.test_client().post("/v1/projects/p/models/nope:predict",
                                 json={"instances": [[1.0, 2.0]]})
    assert got.status_code == 404
    assert "error" in got.get_json()


def test_custom_predictor_gets_json_values(app: Flask) -> None:
    """A custom routine overrides predict: integers stay integers, not float64."""
    got = app.test_client().post("/v1/projects/p/models/echo:predict",
                                 json={"instances": [[1, 2]]})
    assert got.status_code == 200
    assert got.get_json()["predictions"][0]["instance"] == [1, 2]
    assert isinstance(got.get_json()["predictions"][0]["instance"][0], int)
