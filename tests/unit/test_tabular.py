"""Named, typed columns: a request's inputs checked against a model's columns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flask_predict import InvalidInput
from flask_predict import tabular
from flask_predict.tabular import (ANY, NUMBER, TEXT, Column, known_categories, read_columns,
                                   tabular_signature)
from flask_predict.types import TensorSpec

CITY = Column("city", TEXT, "BYTES", categories={"London": 0, "Paris": 1}, strict=True,
              missing_ok=False)
COLUMNS = (Column("age"), Column("income"), CITY)


def text(*values: object) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def test_one_input_per_column_in_the_models_order() -> None:
    read = read_columns({"city": text(b"Paris", "London"), "income": np.array([1.5, 2.5]),
                         "age": np.array([[30], [40]], dtype=np.int32)}, COLUMNS)
    assert list(read) == ["age", "income", "city"]
    assert read["age"].dtype == np.float64 and read["age"].tolist() == [30.0, 40.0]
    assert read["city"].tolist() == ["Paris", "London"]


def test_a_lone_matrix_is_the_rows_and_a_lone_column_takes_any_name() -> None:
    numbers = (Column("a"), Column("b"))
    read = read_columns({"input-0": np.array([[1.0, 2.0], [3.0, 4.0]])}, numbers)
    assert read["a"].tolist() == [1.0, 3.0] and read["b"].tolist() == [2.0, 4.0]
    assert read_columns({"text": text("hi")}, (Column("inputs", TEXT, "BYTES"),)) == {
        "inputs": ["hi"]}
    with pytest.raises(InvalidInput, match=r"takes 2 columns \['a', 'b'\].*shape \[2, 3\]"):
        read_columns({"x": np.zeros((2, 3))}, numbers)


@pytest.mark.parametrize(("inputs", "message"), [
    ({"age": np.ones(1), "income": np.ones(1), "city": text("Paris"), "zip": np.ones(1)},
     r"unknown input\(s\) \['zip'\]; the model's columns are \['age', 'income', 'city'\]"),
    ({"age": np.ones(1), "city": text("Paris")}, r"missing column\(s\) \['income'\]"),
    ({"age": np.ones(2), "income": np.ones(1), "city": text("Paris")},
     "columns hold different numbers of rows: 'age' 2, 'income' 1"),
    ({"age": np.ones((1, 2)), "income": np.ones(1), "city": text("Paris")},
     r"column 'age': expected one value per row \(shape \[N\] or \[N, 1\]\), got shape \[1, 2\]"),
    ({"age": text(b"30"), "income": np.ones(1), "city": text("Paris")},
     "column 'age': expected numbers, got text"),
    ({"age": np.array([True]), "income": np.ones(1), "city": text("Paris")},
     "column 'age': expected numbers, got booleans"),
    ({"age": np.ones(1), "income": np.ones(1), "city": np.array([7])},
     "column 'city': expected text, got numbers"),
    ({"age": np.ones(1), "income": np.ones(1), "city": text(7)},
     "column 'city': expected text, got numbers"),
    ({"age": np.ones(1), "income": np.ones(1), "city": text(b"\xff")},
     "column 'city': value 0 is not UTF-8 text"),
    ({"age": np.ones(1), "income": np.ones(1), "city": text("Berlin")},
     "column 'city': unknown category \"Berlin\"; the model knows \\['London', 'Paris'\\]"),
    ({"age": np.ones(1), "income": np.ones(1), "city": text(None)},
     r"column 'city': a missing value \(null or NaN\) is not among the model's categories"),
])
def test_every_problem_names_its_column(inputs: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        read_columns(inputs, COLUMNS)


def test_numbers_with_nulls_are_nan_and_numeric_categories_match_by_value() -> None:
    grade = Column("grade", NUMBER, "FP32", categories={3: 0, 7: 1}, strict=True)
    read = read_columns({"grade": text(3, None, 7.0)}, (grade,))
    assert read["grade"][0] == 3.0 and math.isnan(read["grade"][1])
    with pytest.raises(InvalidInput, match="column 'grade': unknown category 3.5"):
        read_columns({"grade": np.array([3.5])}, (grade,))


def test_a_text_column_that_takes_no_missing_value_refuses_null() -> None:
    """A text vectorizer cannot read a missing text (``missing_ok=False``)."""
    review = Column("review", TEXT, "BYTES", missing_ok=False)
    with pytest.raises(InvalidInput, match=r"column 'review': value 1 is missing \(null\)"):
        read_columns({"review": text("fine", None)}, (review,))
    with pytest.raises(InvalidInput, match="column 'review': value 0 is missing"):
        read_columns({"review": text(math.nan)}, (review,))
    note = Column("note", TEXT, "BYTES")  # an imputer fills it: taken
    assert read_columns({"note": text(None, b"x")}, (note,))["note"].tolist() == [None, "x"]


def test_lenient_categories_reach_the_model_and_any_column_keeps_numbers() -> None:
    lenient = Column("city", TEXT, "BYTES", categories={"Paris": 0})
    assert read_columns({"city": text("Berlin")}, (lenient,))["city"].tolist() == ["Berlin"]
    unused = (Column("a"), Column("note", ANY, "BYTES"))
    read = read_columns({"a": np.ones(2), "note": text(b"x", 5)}, unused)
    assert read["note"].tolist() == ["x", 5]
    assert read_columns({"a": np.ones(1), "note": np.array([2])}, unused)["note"].tolist() == [2]


def test_long_lists_are_cut_in_messages() -> None:
    many = tuple(Column(f"c{i}") for i in range(30))
    with pytest.raises(InvalidInput, match=r"'c19', \.\.\. \(30 in all\)\]$"):
        read_columns({"c0": np.ones(1)}, many)


def test_signature_and_metadata_helpers() -> None:
    signature = tabular_signature(COLUMNS, [TensorSpec("predict", "INT64", (-1,))])
    assert signature.tabular
    assert [(s.name, s.datatype, s.shape) for s in signature.inputs] == [
        ("age", "FP64", (-1,)), ("income", "FP64", (-1,)), ("city", "BYTES", (-1,))]
    assert known_categories(COLUMNS) == {"city": ["London", "Paris"]}


@pytest.mark.parametrize("missing, infinite, expected", [
    (True, True, "feature 1: value 2 is missing"),  # the first column, missing before infinite
    (False, True, "feature 3: value 0 is infinite"),  # NaN taken (XGBoost), infinity not
    (True, False, "feature 1: value 2 is missing"),
    (False, False, None),
])
def test_the_first_refused_feature_is_named(missing: bool, infinite: bool,
                                            expected: str | None) -> None:
    features = np.zeros((4, 5))
    features[2, 1] = np.nan
    features[0, 3] = np.inf
    features[3, 4] = np.nan
    refused = tabular.refused_feature(features, missing=missing, infinite=infinite)
    if expected is None:
        assert refused is None
    else:
        assert refused is not None and refused.message.startswith(expected), refused
    assert tabular.refused_feature(np.ones((3, 5)), missing=True, infinite=True) is None
    assert tabular.refused_feature(np.ones((3, 5), dtype=np.int64), missing=True,
                                   infinite=True) is None
