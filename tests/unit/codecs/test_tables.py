"""Rows of numbers -> one matrix: the same values the per-column decoders make, or no answer
(and the request goes to those decoders and their errors)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from flask_predict import codecs
from flask_predict.types import Signature, TensorSpec

NUMBER_ROWS = [
    [[1.5, -2.25], [3.0, 4e-3]],
    [[1, 2], [3, 4]],                                  # integers: a double column takes them
    [[1, 2.5], [0, 1]],                                # 0 and 1 that are numbers, not booleans
    [[9007199254740991, -9007199254740991.0]],         # 2**53 - 1 both ways
    [[0.1, 0.2, 0.30000000000000004]],
    [[5e-324, 1e15, -0.0]],
    [[7.0]],
]

NOT_NUMBER_ROWS = [
    [],                                   # no rows
    [[]],                                 # rows of nothing
    [1.5, 2.5],                           # one row, not a list of rows
    "1,2",
    [(1.0, 2.0)],                         # a tuple is not a JSON row
    [[1.0, "a"]],                         # text in a numeric column
    [[1.0, "1.5"]],                       # a number written as text
    [[1.0, True]],                        # a boolean among numbers (numpy reads it as 1)
    [[0.5, False]],
    [[True, False]],
    [[1.0, None]],                        # null
    [[1.0, math.nan]],                    # NaN and infinity tokens, as simplejson reads them
    [[1.0, -math.inf]],
    [[1.0, 2.0], [3.0]],                  # ragged
    [[1.0, [2.0]], [3.0, 4.0]],           # nested
    [[[1.0, 2.0]]],                       # one level too deep
    [[1.0, {"a": 1}]],                    # an object
    [[2 ** 53, 1]],                       # from 2**53 on, the decoders decide
    [[float(2 ** 53), 1.5]],
    [[2 ** 70, 1]],                       # past 64 bits
    [[2 ** 64 - 1]],
]


def decoded_columns(rows: list[list[Any]]) -> dict[str, np.ndarray]:
    """What the per-column decoders make of *rows* for a table of double columns."""
    names = [f"c{i}" for i in range(len(rows[0]))]
    signature = Signature(inputs=tuple(TensorSpec(name, "FP64", (-1,)) for name in names),
                          outputs=(), tabular=True)
    return codecs.columns_to_tensors(
        {name: [row[i] for row in rows] for i, name in enumerate(names)}, signature)


@pytest.mark.parametrize("rows", NUMBER_ROWS)
def test_rows_of_numbers_are_the_matrix_of_the_decoded_columns(rows: list[list[Any]]) -> None:
    matrix = codecs.number_rows(rows)
    assert matrix is not None and matrix.dtype == np.float64 and matrix.flags.c_contiguous
    assert matrix.shape == (len(rows), len(rows[0]))
    for index, column in enumerate(decoded_columns(rows).values()):
        assert column.dtype == np.float64
        np.testing.assert_array_equal(matrix[:, index], column)


@pytest.mark.parametrize("rows", NOT_NUMBER_ROWS, ids=repr)
def test_anything_else_gets_no_answer(rows: Any) -> None:
    assert codecs.number_rows(rows) is None


def test_a_column_matrix_is_a_dict_of_its_columns() -> None:
    matrix = np.arange(12.0).reshape(4, 3)
    columns = codecs.ColumnMatrix(["a", "b", "c"], matrix)
    assert list(columns) == ["a", "b", "c"]
    for index, values in enumerate(columns.values()):
        np.testing.assert_array_equal(values, matrix[:, index])
    assert codecs.matrix_of(columns, ("a", "b", "c")) is matrix


@pytest.mark.parametrize("change", ["replace", "delete", "add"])
def test_a_changed_column_matrix_has_no_matrix(change: str) -> None:
    columns = codecs.ColumnMatrix(["a", "b"], np.ones((2, 2)))
    if change == "replace":
        columns["a"] = np.zeros(2)
    elif change == "delete":
        del columns["b"]
    else:
        columns["c"] = np.zeros(2)
    assert codecs.matrix_of(columns, ["a", "b"]) is None


def test_only_the_same_names_in_order_get_the_matrix() -> None:
    columns = codecs.ColumnMatrix(["a", "b"], np.ones((2, 2)))
    assert codecs.matrix_of(columns, ["b", "a"]) is None
    assert codecs.matrix_of(columns, ["a"]) is None
    assert codecs.matrix_of(dict(columns), ["a", "b"]) is None


def test_named_rows_takes_the_wanted_columns_in_their_order() -> None:
    rows = [[1, 10.5, 100], [2, 20.5, 200]]
    columns = codecs.named_rows(["x", "y", "extra"], rows, ["y", "x"])
    assert columns is not None and list(columns) == ["y", "x"]
    np.testing.assert_array_equal(columns.matrix, [[10.5, 1], [20.5, 2]])
    assert codecs.matrix_of(columns, ["y", "x"]) is columns.matrix
    in_order = codecs.named_rows(["x", "y"], [[1, 2]], ["x", "y"])
    assert in_order is not None and in_order.matrix.flags.c_contiguous


@pytest.mark.parametrize("columns, rows, wanted", [
    (["x", "y"], [[1, 2]], ["x", "z"]),           # a wanted column missing
    (["x", "y", "z"], [[1, 2]], ["x", "y"]),       # rows narrower than the columns
    (["x", "y"], [[1, "a"]], ["x"]),              # text in an extra column: the decoders'
    (["x", "y"], [[1, None]], ["x", "y"]),
])
def test_named_rows_leaves_other_tables(columns: list[str], rows: list[list[Any]],
                                        wanted: list[str]) -> None:
    assert codecs.named_rows(columns, rows, wanted) is None


def _split_body(rows: Any, columns: Any = None, **members: Any) -> bytes:
    """A ``dataframe_split`` body of *rows*, long enough for simdjson (over 768 bytes)."""
    names = columns if columns is not None else [f"c{i}" for i in range(len(rows[0]))]
    table = {"columns": names, "data": rows, **members}
    return json.dumps({"dataframe_split": table}).encode()


LONG = 100
"""Copies of a row that make a body long enough for simdjson."""


@pytest.mark.parametrize("rows", NUMBER_ROWS[:6])
def test_a_long_table_of_numbers_is_read_as_number_rows_reads_it(rows: list[list[Any]]) -> None:
    body = _split_body(rows * LONG)
    found = codecs.number_table(body, "dataframe_split")
    assert found is not None
    columns, matrix = found
    assert columns == [f"c{i}" for i in range(len(rows[0]))]
    expected = codecs.number_rows(json.loads(body)["dataframe_split"]["data"])
    assert expected is not None
    np.testing.assert_array_equal(matrix, expected)
    assert matrix.dtype == np.float64


@pytest.mark.parametrize("body", [
    _split_body([[1.5, 2.5]]),                                      # short: orjson's
    _split_body([[1.5, 2.5]] * LONG, index=list(range(LONG))),      # another member
    _split_body([[1.5, 2.5]] * LONG, ["a", "a"]),                   # a column named twice
    _split_body([[1.5, 2.5]] * LONG, ["a", 1]),                     # a name not text
    _split_body([[1.5, 2.5]] * LONG, ["a[", "b"]),                  # a bracket in a name
    _split_body([[1.5, 2.5]] * LONG, ["a"]),                        # rows wider than names
    _split_body([[1.5, 2.5]] * LONG + [[1.5]]),                     # ragged
    _split_body([[1.5, [2.5]]] + [[1.5, 2.5]] * LONG),              # nested
    *(_split_body([[1.5, value]] + [[1.5, 2.5]] * LONG)
      for value in ("2.5", True, None, {"a": 1}, 2 ** 53, 2 ** 70)),
    _split_body([[1.5, 2.5]] * LONG).replace(b"2.5]]", b"NaN]]"),   # a NaN token
    json.dumps({"dataframe_split": {"columns": ["a"], "data": [[1.5]] * LONG},
                "params": {"x": 1}}).encode(),
    json.dumps({"dataframe_records": [{"a": 1.5}] * LONG}).encode(),
    _split_body([[1.5, 2.5]] * LONG)[:-2],                          # not JSON
], ids=lambda body: body[-60:].decode(errors="replace"))
def test_any_other_body_is_left_to_the_full_parse(body: bytes) -> None:
    assert codecs.number_table(body, "dataframe_split") is None
