"""``below_one`` prints float64 values between 1e-11 and 1 as TF Serving's ``WriteDecimal``."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from flask_predict import codecs
from flask_predict.codecs.tfnumbers import below_one, cells, digits, writer as printing
from flask_predict.protocols.tfserving import wire
from flask_predict.types import Tensor

pytestmark = pytest.mark.skipif(not digits.VECTORISED,
                                reason="no 64-bit long double or numpy string functions here")


def rule(values: Tensor) -> list[str]:
    return [digits.write_decimal(value, False) for value in values.tolist()]


def assert_as_the_rule(values: Tensor) -> None:
    """Both forms answer the rule's texts (the cells once their NULs are dropped)."""
    expected = rule(values)
    assert below_one.fraction_texts(values) == expected
    found = below_one.fraction_cells(values)
    assert found is not None
    assert [cell.replace(b"\0", b"").decode() for cell in found.tolist()] == expected


@pytest.mark.parametrize("size", [1, 65, 200, 1000, 20000])
def test_probabilities_of_two_classes(size: int) -> None:
    p = np.random.default_rng(size).random((size // 2 + 1, 1))
    assert_as_the_rule(np.hstack([1 - p, p]).ravel()[:size])


@pytest.mark.parametrize("seed", range(6))
def test_every_decade_and_sign(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = 10.0 ** rng.uniform(-11, 0, 5000)
    values[rng.random(5000) < 0.5] *= -1
    assert_as_the_rule(values)


def test_short_decimals_and_six_digits_that_read_back() -> None:
    rng = np.random.default_rng(7)
    values = np.array([round(value, int(places)) for value, places in
                       zip(rng.random(5000).tolist(), rng.integers(4, 17, 5000))])
    values = values[(values >= 1e-4) & (values < 1)]
    assert_as_the_rule(values)
    assert_as_the_rule(np.array([0.5, 0.25, 0.125, 0.123456, 0.1, 0.0001, 0.00011, 0.9999995,
                                 0.99999949999, 0.1000005, 0.099999951, 0.0009999995,
                                 0.09999999999999999, -0.5]))
    values = np.array([round(value, int(places)) for value, places in
                       zip((10.0 ** rng.uniform(-11, -4, 5000)).tolist(),
                           rng.integers(6, 26, 5000))])
    assert_as_the_rule(values[values >= 1e-11])


def test_values_below_1e_4_are_written_with_an_exponent() -> None:
    values = np.array([0.5, 7e-05, -7.5e-05, 1e-05, 9.9999995e-05, 9.999995e-06, 1.5e-11,
                       2e-11, 3.0000000000000001e-07, 7.6915026400000001e-05,
                       1.2345678901234567e-10, -0.25])
    expected = rule(values)
    assert expected[1:4] == ["7e-05", "-7.5e-05", "1e-05"]
    assert expected[7:10] == ["2e-11", "3e-07", "7.6915026400000002e-05"]
    assert_as_the_rule(values)
    found = below_one.fraction_grid(values, comma=False)
    assert found is not None and found[1].size == 0  # none left to the rule


def test_decade_bounds_are_exact() -> None:
    # each bound is the smallest double at or above its power of ten: searchsorted decides
    assert len(below_one._DECADES) == 12
    for exponent, bound in zip(range(-11, 1), below_one._DECADES.tolist()):
        assert Fraction(bound) >= Fraction(10) ** exponent
        assert Fraction(np.nextafter(bound, 0)) < Fraction(10) ** exponent
    bounds = below_one._DECADES[:-1]
    assert_as_the_rule(np.concatenate([bounds, np.nextafter(bounds, 0)[1:],
                                       np.nextafter(bounds, 1), [np.nextafter(1.0, 0)]]))


def test_exact_ties_are_printed_by_the_rule() -> None:
    # 211 * 2**-21 is 0.000100612640380859375: its 17 digits end on an exact half
    tie = 211 * 2.0 ** -21
    values = np.array([0.3, tie, -tie, 0.7])
    found = below_one.fraction_grid(values, comma=False)
    assert found is not None
    assert found[1].tolist() == [1, 2]
    assert_as_the_rule(values)


@pytest.mark.parametrize("other", [0.0, -0.0, 1.0, 5.0, -3e7, 1e-12, 1e-300, np.nan, np.inf,
                                   -np.inf])
def test_a_few_values_of_another_layout_are_printed_by_the_rule(other: float) -> None:
    rng = np.random.default_rng(8)
    values = rng.random(300) * 0.9 + 0.05
    spots = rng.choice(300, digits.FEW_OTHERS, replace=False)
    values[spots] = other
    assert_as_the_rule(values)
    values[np.setdiff1d(np.arange(300), spots)[0]] = other
    assert below_one.fraction_texts(values) is None
    assert below_one.fraction_cells(values) is None
    assert printing.float_texts(values) == rule(values)  # the other paths take them


@pytest.mark.parametrize("ends", [(1.0, 1.0), (5.0, -2.0), (np.nan, 1.0)])
def test_not_looked_at_when_both_ends_are_not_below_one(ends: tuple[float, float]) -> None:
    values = np.random.default_rng(10).random(100) * 0.9 + 0.05
    values[0], values[-1] = ends
    assert below_one.fraction_texts(values) is None
    assert printing.float_texts(values) == rule(values)  # the other paths print them
    values[0] = 0.5
    assert_as_the_rule(values)


def test_tf_serving_paths_take_it() -> None:
    p = np.random.default_rng(9).random((300, 1))
    probabilities = np.hstack([1 - p, p])
    assert printing.float_texts(probabilities) == rule(probabilities.ravel())
    lines = cells.block(probabilities)
    assert lines is not None
    expected = "[" + ",".join(f"[{a},{b}]" for a, b in zip(rule(probabilities[:, 0]),
                                                          rule(probabilities[:, 1]))) + "]"
    assert cells.lines_text([lines], 300).decode() == expected
    assert printing.array_text(probabilities) == expected


@pytest.mark.parametrize("width", [2, 3, 10])
def test_rows_are_the_rule_texts_joined(width: int) -> None:
    rng = np.random.default_rng(width)
    values = rng.random((400 // width, width)) * 0.9 + 0.05
    values[3, width - 1] = 211 * 2.0 ** -21  # a tie, left to the rule
    values[5, 0] = 0.0  # another layout, left to the rule
    values[7, 1] = -3.5e-07  # written with an exponent
    rows = below_one.fraction_rows(values)
    assert rows == [",".join(rule(row)) for row in values]
    assert below_one.fraction_rows(np.zeros((3, 0))) == ["", "", ""]


def test_tf_serving_answers_of_a_few_hundred_numbers_take_rows() -> None:
    p = np.random.default_rng(11).random((100, 1))
    probabilities = np.hstack([1 - p, p])
    expected_rows = [f"[{a},{b}]" for a, b in zip(rule(probabilities[:, 0]),
                                                 rule(probabilities[:, 1]))]
    assert printing.row_texts(probabilities) is not None
    assert printing.array_text(probabilities) == "[" + ",".join(expected_rows) + "]"
    labels = (p[:, 0] > 0.5).astype(np.int64)
    answer = wire.encode_predict({"predict": labels, "predict_proba": probabilities}, True)
    assert codecs.dumps_tfserving(answer) == ('{"predictions":[' + ",".join(
        f'{{"predict":{label},"predict_proba":{row}}}'
        for label, row in zip(labels.tolist(), expected_rows)) + "]}").encode()
    assert printing.row_texts(probabilities[:20]) is None  # few numbers: one by one
    assert printing.row_texts(probabilities.astype(np.float32)) is None
