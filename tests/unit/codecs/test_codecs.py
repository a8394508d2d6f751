"""codecs: JSON bodies, JSON values <-> arrays, row format."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from flask_predict import codecs
from flask_predict.codecs import tfnumbers
from flask_predict.errors import InvalidInput
from flask_predict.types import Signature, TensorSpec


def test_loads_accepts_nan_and_infinity_tokens() -> None:
    body = codecs.loads(b'{"a": [NaN, Infinity, -Infinity, 1.5]}')
    assert math.isnan(body["a"][0])
    assert body["a"][1:] == [math.inf, -math.inf, 1.5]


def test_loads_accepts_integers_over_64_bits() -> None:
    (value,) = codecs.loads(b"[123456789012345678901234567890]")
    assert value == pytest.approx(1.2345678901234568e29)


@pytest.mark.parametrize("body", [b"{", b"nope", b'{"a": 1,}', b"\xff\xfe", b'{"a": "\\ud800"'])
def test_loads_refuses_broken_json(body: bytes) -> None:
    with pytest.raises(InvalidInput, match="JSON Parse error"):
        codecs.loads(body)


def test_loads_refuses_deep_nesting_without_recursion_error() -> None:
    with pytest.raises(InvalidInput, match="nested too deeply"):
        codecs.loads(b"[" * 10_000 + b"]" * 10_000)


def test_dumps_prints_non_finite_tokens() -> None:
    assert codecs.dumps({"a": [math.nan, math.inf, -math.inf]}) == \
        b'{"a":[NaN,Infinity,-Infinity]}'
    assert codecs.dumps(np.array([np.nan, 1.0], dtype=np.float32)) == b"[NaN,1.0]"


def test_dumps_keeps_null_and_prints_numpy() -> None:
    assert codecs.dumps({"a": None, "b": np.array([1, 2]), "c": np.float32(2.05)}) == \
        b'{"a":null,"b":[1,2],"c":2.05}'


def test_dumps_float32_arrays_at_their_own_precision() -> None:
    assert codecs.dumps(np.array([2.05, 0.1], dtype=np.float32)) == b"[2.05,0.1]"


def test_to_array_keeps_dtype_and_shape() -> None:
    array = codecs.to_array([[1, 2], [3, 4]], "INT32", "x")
    assert array.dtype == np.int32 and array.shape == (2, 2)


def test_to_array_null_is_nan_in_float_inputs() -> None:
    array = codecs.to_array([[None, 1.0], [2.0, None]], "FP32", "x")
    assert np.isnan(array[0, 0]) and np.isnan(array[1, 1]) and array[0, 1] == 1.0


def test_to_array_null_in_bytes_is_missing_only_when_asked() -> None:
    """A table's text column (V2 BYTES data): ``null`` is a missing value, ``None``."""
    array = codecs.to_array([["a"], [None]], "BYTES", "city", missing=True)
    assert array.shape == (2, 1) and array.tolist() == [[b"a"], [None]]
    with pytest.raises(InvalidInput, match="input 'city': expected strings"):
        codecs.to_array([["a"], [None]], "BYTES", "city")


@pytest.mark.parametrize("values, datatype, message", [
    ([["1.5", 2.0]], "FP64", "got strings"),
    ([[1.0, "a"], [None, 2.0]], "FP64", "expected numbers"),
    ([[1.0, 2.0], [3.0]], "FP64", "ragged"),
    ([[1.5]], "INT64", "fractions"),
    ([[300]], "UINT8", "out of range"),
    ([[None]], "INT32", "null"),
    ([1, 0], "BOOL", "BOOL"),
    ([[{"b64": "AA=="}]], "FP32", "expected numbers"),
])
def test_to_array_refuses_what_does_not_fit(values: object, datatype: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        codecs.to_array(values, datatype, "x")


def test_to_array_names_the_input_in_errors() -> None:
    with pytest.raises(InvalidInput, match="input 'features'"):
        codecs.to_array([["a"]], "FP32", "features")


def test_bytes_from_text_and_b64() -> None:
    array = codecs.to_array([["abc", {"b64": "AAE="}]], "BYTES", "x")
    assert array.shape == (1, 2) and array[0, 0] == b"abc" and array[0, 1] == b"\x00\x01"


@pytest.mark.parametrize("values", [[{"b64": "not base64!"}], [{"b64": 3}], [1], [["a"], "b"]])
def test_bytes_refuses_bad_values(values: object) -> None:
    with pytest.raises(InvalidInput):
        codecs.to_array(values, "BYTES", "x")


def test_unknown_datatype() -> None:
    with pytest.raises(InvalidInput, match="unsupported datatype"):
        codecs.to_array([1], "FP128", "x")


def test_check_shape() -> None:
    spec = TensorSpec("x", "FP32", (-1, 3))
    codecs.check_shape(np.zeros((5, 3)), spec)
    with pytest.raises(InvalidInput, match=r"expected shape \[-1, 3\], got \[5, 2\]"):
        codecs.check_shape(np.zeros((5, 2)), spec)
    codecs.check_shape(np.zeros((2, 2, 2)), TensorSpec("x", "FP32", None))


ONE = Signature(inputs=(TensorSpec("x", "FP64", (-1, 2)),), outputs=())
TWO = Signature(inputs=(TensorSpec("a", "FP32", (-1,)), TensorSpec("b", "BYTES", (-1,))),
                outputs=())


def test_rows_single_input() -> None:
    tensors = codecs.rows_to_tensors([[1, 2], [3, 4]], ONE)
    assert tensors["x"].tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_rows_named_inputs() -> None:
    tensors = codecs.rows_to_tensors([{"a": 1.0, "b": "x"}, {"a": 2.0, "b": {"b64": "eQ=="}}],
                                     TWO)
    assert tensors["a"].tolist() == [1.0, 2.0] and tensors["b"].tolist() == [b"x", b"y"]


@pytest.mark.parametrize("instances, message", [
    (3, "Expecting 'instances' to be an list/array"),
    ([], "No values in 'instances' array"),
    ([{"a": 1.0, "c": "x"}], "does not have named input: c"),
    ([{"a": 1.0, "b": "x"}, {"a": 2.0}], "Failed to process element: 1 of 'instances' list. "
                                         'JSON object: {"a":2.0} keys must be equal to: a,b '
                                         r"\(missing input\(s\): 'b'\)$"),
    ([1.0, 2.0], "instances is a plain list, but expecting list of objects"),
])
def test_rows_errors(instances: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        codecs.rows_to_tensors(instances, TWO)


def test_tensors_to_rows_single_and_several_outputs() -> None:
    assert codecs.tensors_to_rows({"y": np.array([1, 2])}) == [1, 2]
    rows = codecs.tensors_to_rows({"y": np.array([1, 2]), "p": np.array([[0.5], [0.25]])})
    assert rows == [{"y": 1, "p": [0.5]}, {"y": 2, "p": [0.25]}]


def test_json_value_bytes() -> None:
    out = np.array([b"text", b"\xff"], dtype=object)
    assert codecs.json_value(out, "out") == ["text", {"b64": "/w=="}]
    assert codecs.json_value(out, "out_bytes") == [{"b64": "dGV4dA=="}, {"b64": "/w=="}]


def test_predictions_to_tensor() -> None:
    assert codecs.predictions_to_tensor([1, 2]).tolist() == [1, 2]
    assert codecs.predictions_to_tensor(["a"]).tolist() == [b"a"]
    docs = codecs.predictions_to_tensor([{"k": 1}, [1, [2]]])
    assert docs.dtype == object and docs.tolist() == [b'{"k":1}', b"[1,[2]]"]


def test_datatype_table_round_trips() -> None:
    for name, dtype in codecs.V2_TO_NUMPY.items():
        assert codecs.NUMPY_TO_V2[dtype] == name


def test_preview_never_prints_more_than_it_shows() -> None:
    huge = {"instances": [[0.5] * 1000 for _ in range(10_000)], "s": "x" * 10**6}
    text = codecs.preview(huge)
    assert text.startswith('{"instances":[[0.5,0.5,') and text.endswith("...")
    assert len(text) == 203
    assert codecs.preview("x" * 10**7, 10) == '"xxxxxxxxx...'
    assert codecs.preview([1.5, 9e6, math.nan, 2**70]) == "[1.5,9e+06,NaN,1180591620717411303424]"


@pytest.mark.parametrize("chunk, shape, message", [
    (b"\0\0\0\0" * 3, (2,), r"shape \[2\] needs 2 values, got more"),
    (b"\1\0\0\0a", (3,), r"shape \[3\] needs 3 values, got 1"),
    (b"\1\0\0", (1,), "ends inside a length prefix"),
])
def test_binary_bytes_are_counted_while_cut(chunk: bytes, shape: tuple[int, ...],
                                            message: str) -> None:
    from flask_predict.protocols.kserve_v2.binary import binary_to_array

    with pytest.raises(InvalidInput, match=message):
        binary_to_array(chunk, "BYTES", shape, "x")


@pytest.mark.parametrize("values, datatype", [
    ([1, True], "FP32"), ([[1.0], [False]], "FP64"), ([True], "INT64"), ([2**70, True], "FP64")])
def test_to_array_refuses_booleans_for_numbers(values: object, datatype: str) -> None:
    with pytest.raises(InvalidInput, match="got booleans"):
        codecs.to_array(values, datatype, "x")


@pytest.mark.parametrize("values, expected", [
    ([1.5, -2e-05, math.nan, math.inf], False),  # numbers print without "t" and "f"
    (["tf", "fat", 1.0], False),  # "t" and "f" in strings: the tokens are searched for
    ([1.0, True], True), ([[2.0], [False]], True), ([2**70, True], True),
    (np.array([True]), True), (np.array([1.0]), False)])
def test_has_booleans_finds_the_tokens_and_only_them(values: object, expected: bool) -> None:
    assert codecs.has_booleans(values) is expected


def test_to_array_refuses_floats_past_the_datatypes_range() -> None:
    with pytest.raises(InvalidInput, match="value out of range for FP32"):
        codecs.to_array([1e39], "FP32", "x")
    assert codecs.to_array([1e39, math.inf], "FP64", "x")[0] == 1e39


@pytest.mark.parametrize("values, datatype, refused", [
    ([1.0, -2.5, 3.4028234663852886e38], "FP32", False),  # float32's largest itself
    ([1.0, -3.402823466385289e38], "FP32", True),
    ([math.nan, 1e39], "FP32", True),  # NaN first: the slow path finds the large one
    ([math.nan, math.inf, -math.inf, 2.0], "FP32", False),  # not finite: not "too large"
    ([1e39, math.inf], "FP32", True),
    ([65504.0, -1.0], "FP16", False),
    ([65520.0], "FP16", True),
    ([[0.5, 1e30], [math.nan, 7.0]], "FP16", True),
])
def test_to_array_range_checks_agree_with_and_without_non_finite_values(
        values: list[Any], datatype: str, refused: bool) -> None:
    if refused:
        with pytest.raises(InvalidInput, match=f"value out of range for {datatype}"):
            codecs.to_array(values, datatype, "x")
        with pytest.raises(InvalidInput, match=f"value out of range for {datatype}"):
            codecs.to_array(np.array(values, dtype=np.float64), datatype, "x")
    else:
        assert codecs.to_array(values, datatype, "x").dtype == codecs.V2_TO_NUMPY[datatype]


def test_v2_infer_body_with_a_nul_in_a_key_is_read_as_loads_reads_it() -> None:
    """simdjson cannot look up a key holding "\\u0000": such a body takes the general
    parser instead of failing (found by fuzzing, tests/openapi/)."""
    body = (b'{"x\\u0000": 1, "inputs": [{"name": "x", "shape": [2], "datatype": "FP32", '
            b'"data": [1.5, 2], "k\\u0000": 0}]}')
    assert codecs.loads_v2_infer(body) == codecs.loads(body)


@pytest.mark.parametrize("row", ["%s", "[%s,%s]", '{"a%%s":%s,"b%%":[%s,%s]}', "[]", "[[],[]]",
                                 "%%%s%%", '{"x":[[%s],[%s]]}'])
@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_fill_rows_answers_what_percent_does(row: str, count: int) -> None:
    slots = row.replace("%%", "").count("%s")
    texts = [f"t{index}%s" for index in range(slots * count)]  # a % in a text stays as it is
    assert tfnumbers.fill_rows(row, count, texts) == ("[" + ",".join([row] * count) + "]") % tuple(
        texts)


def test_past_range_is_what_a_cast_would_change() -> None:
    """Integers that would wrap, finite numbers that would become infinite; never NaN or
    infinity themselves, never a cast to float64."""
    import ml_dtypes

    dtype = np.dtype
    assert codecs.past_range(np.array([2 ** 31]), dtype(np.int32))
    assert not codecs.past_range(np.array([2 ** 31 - 1, -2 ** 31]), dtype(np.int32))
    assert codecs.past_range(np.array([-1]), dtype(np.uint8))
    assert codecs.past_range(np.array([2 ** 63], np.uint64), dtype(np.int64))
    assert codecs.past_range(np.array([1e300, 1.0]), dtype(np.float32))
    assert codecs.past_range(np.array([70000]), dtype(np.float16))
    assert codecs.past_range(np.array([1e39]), dtype(ml_dtypes.bfloat16))
    assert not codecs.past_range(np.array([3e38, np.nan, np.inf, -np.inf]), dtype(np.float32))
    assert not codecs.past_range(np.array([1e308]), dtype(np.float64))
    assert not codecs.past_range(np.array([], np.float64), dtype(np.float16))


TABLE = Signature(inputs=(TensorSpec("age", "FP64", (-1,)), TensorSpec("size", "FP32", (-1,)),
                          TensorSpec("city", "BYTES", (-1,))), outputs=(), tabular=True)
"""A model fitted on a table: one input per column, in order."""


def test_tabular_plain_rows_give_one_value_per_column_by_position() -> None:
    for tensors in (codecs.rows_to_tensors([[30, 1.5, "Paris"], [40, 2.5, "Rome"]], TABLE),
                    codecs.columns_to_tensors([[30, 1.5, "Paris"], [40, 2.5, "Rome"]], TABLE)):
        assert tensors["age"].dtype == np.float64 and tensors["age"].tolist() == [30.0, 40.0]
        assert tensors["size"].dtype == np.float32
        assert tensors["city"].tolist() == [b"Paris", b"Rome"]
    with pytest.raises(InvalidInput, match=r"element: 1 of 'instances' list\. Expecting a row "
                                           r"of 3 values, one per column of the model "
                                           r"\(age,size,city\), got: \[40,2\.5\]"):
        codecs.rows_to_tensors([[30, 1.5, "Paris"], [40, 2.5]], TABLE)
    with pytest.raises(InvalidInput, match="element: 0 key: city of 'inputs' list. Error: "
                                           "INVALID_ARGUMENT: JSON Value: 7"):
        codecs.columns_to_tensors([[30, 1.5, 7]], TABLE)
    # a signature of several inputs that is not a table keeps TF Serving's rule
    with pytest.raises(InvalidInput, match="expecting list of objects"):
        codecs.rows_to_tensors([[1.0, "x"]], TWO)


def test_tabular_null_text_is_missing_where_tf_serving_refuses_it() -> None:
    tensors = codecs.rows_to_tensors([{"age": 1, "size": None, "city": None},
                                      {"age": 2, "size": 3, "city": "Rome"}], TABLE)
    assert tensors["city"].tolist() == [None, b"Rome"] and np.isnan(tensors["size"][0])
    columns = codecs.columns_to_tensors({"age": [1], "size": [2], "city": [None]}, TABLE)
    assert columns["city"].tolist() == [None]
    with pytest.raises(InvalidInput, match="element: 1 key: city of 'instances' list"):
        codecs.rows_to_tensors([[1, 2, None], [1, 2, 5]], TABLE)
    with pytest.raises(InvalidInput, match="not of expected type: string"):
        codecs.rows_to_tensors([{"a": 1.0, "b": None}], TWO)


def test_a_number_matrix_splits_into_a_tables_number_columns() -> None:
    numbers = Signature(inputs=(TensorSpec("a", "FP64", (-1,)), TensorSpec("b", "FP32", (-1,))),
                        outputs=(), tabular=True)
    tensors = codecs.matrix_to_tensors(np.array([[1.0, 2.0], [3.0, 4.0]]), numbers)
    assert tensors is not None and tensors["a"].tolist() == [1.0, 3.0]
    assert tensors["b"].dtype == np.float32
    assert codecs.matrix_to_tensors(np.array([[1.0, 2.0, 3.0]]), numbers) is None
    assert codecs.matrix_to_tensors(np.array([[1.0, 2.0**30]]), numbers) is None  # not float32
    assert codecs.matrix_to_tensors(np.array([[1.0, 2.0, 3.0]]), TABLE) is None  # text column


def test_examples_to_columns_takes_one_value_per_column() -> None:
    examples = [{"age": np.array([30.0], np.float32), "city": np.array([b"Paris"], dtype=object)},
                {"age": np.array([41], np.int64)}]
    columns = codecs.examples_to_columns(examples, ["age", "city"])
    assert columns["age"].tolist() == [30.0, 41] and columns["city"].tolist() == [b"Paris", None]
    with pytest.raises(InvalidInput, match=r"example 0: unknown feature\(s\) \['zip'\]"):
        codecs.examples_to_columns([{"zip": np.array([1.0])}], ["age"])
    with pytest.raises(InvalidInput, match="example 0: feature 'age' must hold one value"):
        codecs.examples_to_columns([{"age": np.array([1.0, 2.0])}], ["age"])
