"""Every JSON parser of the codecs against the standard library's ``json``, over random
values, shapes, nestings and number spellings, and at the sizes where simdjson's 24-bit
element counts used to cut arrays short (2**16, 2**24 elements).

A body of 2**31 elements would be at least 4 GiB, 64 times ``PREDICT_MAX_REQUEST_BYTES``'s
default: no parser is reached with one (the size limits are tested with the protocols), and
:data:`codecs.SIMDJSON_SAFE_BYTES` keeps every body that could hold more than simdjson can
count away from simdjson, which is checked below by arithmetic.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flask_predict import codecs
from flask_predict.codecs import parsing, scanning
from flask_predict.codecs.dtypes import FLOAT_DATATYPES
from flask_predict.errors import InvalidInput

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- generated JSON text: (text, value) pairs ------------------------------------------------

@st.composite
def numbers(draw: st.DrawFn) -> str:
    """A JSON number token in one of its spellings (or a NaN/Infinity token)."""
    kind = draw(st.sampled_from(["int", "big", "float", "exponent", "zero", "token"]))
    if kind == "int":
        return str(draw(st.integers(-2**63, 2**64 - 1)))
    if kind == "big":
        return str(draw(st.integers(-10**40, 10**40)))
    if kind == "float":
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == "exponent":
        mantissa = draw(st.integers(-999, 999))
        fraction = draw(st.sampled_from(["", ".5", ".25", ".0"]))
        marker = draw(st.sampled_from(["e", "E"]))
        sign = draw(st.sampled_from(["", "+", "-"]))
        return f"{mantissa}{fraction}{marker}{sign}{draw(st.integers(0, 330))}"
    if kind == "zero":
        return draw(st.sampled_from(["0", "-0", "0.0", "-0.0", "0e0", "-0E-5"]))
    return draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))


def scalars() -> st.SearchStrategy[str]:
    return st.one_of(numbers(), st.sampled_from(["true", "false", "null"]),
                     st.text(max_size=8).map(lambda s: json.dumps(s, ensure_ascii=False)))


def documents() -> st.SearchStrategy[str]:
    space = st.sampled_from(["", " ", "\n", "\t "])
    return st.recursive(
        scalars(),
        lambda inner: st.one_of(
            st.builds(lambda items, s: "[" + ("," + s).join(items) + "]",
                      st.lists(inner, max_size=6), space),
            st.builds(lambda items, s: "{" + ("," + s).join(
                f"{json.dumps(k)}:{s}{v}" for k, v in items) + "}",
                st.lists(st.tuples(st.sampled_from(["a", "b", "data", "name", ""]) |
                                   st.text(max_size=5), inner), max_size=5), space)),
        max_leaves=40)


def same(got: Any, expected: Any) -> bool:
    """Equal JSON values: same types, NaN equal to NaN, -0.0 unlike 0.0."""
    if isinstance(expected, float):
        return isinstance(got, float) and (
            math.isnan(got) and math.isnan(expected) or
            got == expected and math.copysign(1, got) == math.copysign(1, expected))
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(
            same(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict):
        return isinstance(got, dict) and got.keys() == expected.keys() and all(
            same(got[k], expected[k]) for k in expected)
    return type(got) is type(expected) and got == expected


# --- loads ------------------------------------------------------------------------------------

@FUZZ
@given(documents())
def test_loads_equals_the_standard_library(text: str) -> None:
    expected = json.loads(text)
    assert same(codecs.loads(text.encode()), expected)


@FUZZ
@given(st.text(alphabet='[]{},:"0123456789.eE+-tfnaulrsNIiy \\', max_size=30))
def test_loads_refuses_what_the_standard_library_refuses(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(InvalidInput):
            codecs.loads(text.encode())
    else:
        assert same(codecs.loads(text.encode()), expected)


# --- number_matrix ------------------------------------------------------------------------

@st.composite
def matrices(draw: st.DrawFn) -> str:
    """``{"instances": rows}`` with rows mostly rectangular, sometimes not."""
    rows = draw(st.integers(1, 30))
    width = draw(st.integers(0, 6))
    cells = [[draw(st.one_of(numbers(), st.sampled_from(["null", "true", '"1"', "[]"])))
              if draw(st.integers(0, 20)) == 0 else draw(numbers())
              for _ in range(width + (draw(st.integers(-1, 1)) if
                                      draw(st.integers(0, 10)) == 0 else 0))]
             for _ in range(rows)]
    return json.dumps({"instances": "@"}).replace(
        '"@"', "[" + ",".join("[" + ",".join(row) + "]" for row in cells) + "]")


@FUZZ
@given(matrices())
def test_number_matrix_answers_only_what_json_says(text: str) -> None:
    matrix = codecs.number_matrix(text.encode(), "instances")
    if matrix is None:
        return
    rows = json.loads(text)["instances"]
    assert matrix.shape == (len(rows), len(rows[0]))
    expected = np.asarray(rows, dtype=np.float64)
    assert np.array_equal(matrix, expected)
    assert all(type(v) in (int, float) for row in rows for v in row)


# --- loads_v2_infer ---------------------------------------------------------------------------

@st.composite
def v2_bodies(draw: st.DrawFn) -> str:
    inputs = []
    for index in range(draw(st.integers(1, 3))):
        datatype = draw(st.sampled_from(["FP32", "FP64", "FP16", "INT64", "BYTES"]))
        data = draw(st.one_of(
            st.lists(numbers(), max_size=12).map(lambda xs: "[" + ",".join(xs) + "]"),
            st.lists(st.lists(numbers(), min_size=2, max_size=2), max_size=5).map(
                lambda rows: "[" + ",".join("[" + ",".join(r) + "]" for r in rows) + "]"),
            documents()))
        repeat = draw(st.sampled_from(["", ', "name": "again"', ', "data": [1, 2]']))
        inputs.append('{"name": %s, "datatype": "%s", "shape": [1], "data": %s%s}' % (
            json.dumps(f"x{index}"), datatype, data, repeat))
    again = draw(st.sampled_from(["", ', "id": "again"', ', "inputs": []']))
    return ('{"id": "r", "inputs": [' + ",".join(inputs) + '], "parameters": {"a": [1]}'
            + again + "}")


def flat_numbers(data: Any) -> list[Any] | None:
    """*data*'s numbers when it is a flat list or a list of equal rows of plain numbers."""
    rows = data if data and all(isinstance(r, list) for r in data) else [data]
    if not isinstance(data, list) or not data or len({len(r) for r in rows}) != 1:
        return None
    flat = [v for r in rows for v in r]
    ok = all(type(v) in (int, float) for v in flat)
    return flat if ok else None


@FUZZ
@given(v2_bodies())
def test_loads_v2_infer_equals_the_standard_library(text: str) -> None:
    """Small bodies are read by orjson; trailing blanks take the same text past
    ``SMALL_BODY``, to simdjson."""
    expected = json.loads(text)
    for padding in (0, parsing.SMALL_BODY + 1):
        check_v2_infer(codecs.loads_v2_infer(text.encode() + b" " * padding), expected)


def check_v2_infer(got: Any, expected: Any) -> None:
    assert got.keys() == expected.keys()
    for key in expected:
        if key != "inputs":
            assert same(got[key], expected[key])
    for tensor, want in zip(got["inputs"], expected["inputs"]):
        data = tensor["data"]
        if isinstance(data, np.ndarray):  # the fast path: only for plain numbers
            flat = flat_numbers(want["data"])
            assert flat is not None and want["datatype"] in FLOAT_DATATYPES
            assert np.array_equal(data, np.asarray(flat, dtype=np.float64), equal_nan=True)
            assert {k: v for k, v in tensor.items() if k != "data"} == {
                k: v for k, v in want.items() if k != "data"}
        else:
            assert same(tensor, want)


# --- nesting depth --------------------------------------------------------------------------

class Pairs(list):  # type: ignore[type-arg]
    """An object with its repeated keys kept (the text nests them all)."""


def depth(value: Any) -> int:
    if isinstance(value, Pairs):
        return 1 + max((depth(v) for _, v in value), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@FUZZ
@given(documents())
def test_nesting_depth_counts_what_json_nests(text: str) -> None:
    assert scanning.nesting_depth(text.encode()) == depth(json.loads(text, object_pairs_hook=Pairs))


@FUZZ
@given(st.binary(max_size=64), st.sampled_from([1, 100, 200]))
def test_bracket_counts_on_either_side_of_numpy(chunk: bytes, repeat: int) -> None:
    """bytes.count below NUMPY_COUNT_FROM, numpy's comparison from it on: the same counts."""
    body = (chunk + b"[{]}") * repeat
    assert scanning.count_byte(body, b"[") == body.count(b"[")
    assert scanning._count_openings(body) == body.count(b"[") + body.count(b"{")


@pytest.mark.parametrize("padding", [0, scanning.NUMPY_COUNT_FROM])
def test_check_depth_in_small_and_large_bodies(padding: int) -> None:
    deep = b"[" * 40 + b" " * padding + b"]" * 40
    codecs.check_depth(deep, 40)
    with pytest.raises(InvalidInput, match="nested too deeply"):
        codecs.check_depth(deep, 39)
    wide = b"[" + b"{}," * 30 + b" " * padding + b"[[]]]"  # many brackets, three deep
    codecs.check_depth(wide, 3)


# --- sizes around simdjson's counts ---------------------------------------------------------

def array_body(count: int, key: str | None = None) -> bytes:
    """``[1,1,...,7]`` (*count* values, the last one 7), optionally as ``{key: [...]}``."""
    values = b"1," * (count - 1) + b"7"
    body = b"[" + values + b"]"
    return b'{"%s":%s}' % (key.encode(), body) if key else body


@pytest.mark.parametrize("count", [2**16 - 1, 2**16, 2**16 + 1])
def test_every_parser_at_two_to_the_sixteen(count: int) -> None:
    parsed = codecs.loads(array_body(count))
    assert len(parsed) == count and parsed[-1] == 7
    matrix = codecs.number_matrix(b'{"instances": [%s]}' % array_body(count), "instances")
    assert matrix is not None and matrix.shape == (1, count) and matrix[0, -1] == 7
    v2 = codecs.loads_v2_infer(b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [%d], '
                               b'"data": %s}]}' % (count, array_body(count)))
    data = v2["inputs"][0]["data"]
    assert len(data) == count and data[-1] == 7


def v2_body(datatype: bytes, values: bytes, count: int) -> bytes:
    return (b'{"inputs": [{"name": "x", "datatype": "%s", "shape": [%d], "data": %s}]}'
            % (datatype, count, values))


def test_simdjson_at_the_largest_array_it_reads() -> None:
    """Just under 2**24 elements: about the longest array whose body simdjson still reads;
    its counts are exact there."""
    count = (parsing.SIMDJSON_SAFE_BYTES - 100) // 2
    body = array_body(count)
    assert len(body) <= parsing.SIMDJSON_SAFE_BYTES
    matrix = codecs.number_matrix(b'{"instances":[%s]}' % body, "instances")
    assert matrix is not None and matrix.shape == (1, count) and matrix[0, -1] == 7
    del matrix
    assert len(v2_body(b"INT64", body, count)) <= parsing.SIMDJSON_SAFE_BYTES
    for datatype in (b"FP32", b"INT64"):
        data = codecs.loads_v2_infer(v2_body(datatype, body, count))["inputs"][0]["data"]
        assert len(data) == count and data[-1] == 7


def test_every_parser_past_two_to_the_twenty_four() -> None:
    """2**24 + 5 elements (the gzip V2 body that was cut to 16,777,215 values): every
    parser answers every element."""
    count = 2**24 + 5
    body = array_body(count)
    parsed = codecs.loads(body)
    assert len(parsed) == count and parsed[-1] == 7
    del parsed
    assert codecs.number_matrix(b'{"instances":[%s]}' % body, "instances") is None
    data = codecs.loads_v2_infer(v2_body(b"FP32", body, count))["inputs"][0]["data"]
    assert len(data) == count and data[-1] == 7


def test_simdjson_never_sees_a_body_that_could_hold_more_than_it_counts() -> None:
    """The shortest array of MAX_COUNT + 1 elements is longer than the bodies simdjson
    reads, so the length check before simdjson is enough, at 2**24 or 2**31 elements."""
    assert len(array_body(parsing.SIMDJSON_MAX_COUNT + 1)) > parsing.SIMDJSON_SAFE_BYTES
    for elements in (2**24, 2**31):
        assert 2 * elements + 1 > parsing.SIMDJSON_SAFE_BYTES
