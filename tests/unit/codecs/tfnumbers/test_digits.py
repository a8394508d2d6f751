"""``digits.float_cells`` prints what TF Serving's ``WriteDecimal`` prints, or leaves the value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flask_predict.codecs.tfnumbers import digits, writer as printing
from flask_predict.types import Tensor

pytestmark = pytest.mark.skipif(not digits.VECTORISED,
                                reason="no 64-bit long double or numpy string functions here")


def assert_as_the_rule(values: Tensor, single: bool = False) -> Tensor:
    """Every cell answered equals ``write_decimal``'s text; the indices left to it."""
    if single:
        values = values.astype(np.float32).astype(np.float64)
    cells, left = digits.float_cells(values, single)
    assert cells.shape == values.shape
    skipped = set(left.tolist())
    for index, value in enumerate(values.tolist()):
        if index in skipped:
            assert cells[index] == b""
        else:
            assert cells[index].decode() == digits.write_decimal(value, single), value
    return left


@pytest.mark.parametrize("single", [False, True])
def test_probabilities_are_printed_here_nearly_all(single: bool) -> None:
    values = np.random.default_rng(1).random(50000)
    left = assert_as_the_rule(values, single)
    # only products exactly half a unit from an integer are left: at most 1 in 128
    assert left.size < 0.006 * values.size


@pytest.mark.parametrize(("value", "single"), [
    (211 * 2.0 ** -21, False), (2.0 ** -25, False), (3 * 2.0 ** -25, False),
    (2.0 ** -13, True), (3 * 2.0 ** -13, True)])
def test_exact_ties_at_the_last_digit_are_left_to_the_rule(value: float, single: bool) -> None:
    # 211 * 2**-21 is 0.000100612640380859375: its 17 digits end on an exact half
    values = np.array([value, 0.25, value])
    assert assert_as_the_rule(values, single).tolist() == [0, 2]
    assert printing.float_texts(values.astype(np.float32) if single else values)[0] == (
        digits.write_decimal(value, single))


@pytest.mark.parametrize("single", [False, True])
def test_every_magnitude_and_sign(single: bool) -> None:
    rng = np.random.default_rng(2)
    values = (rng.random(50000) - 0.5) * 10.0 ** rng.integers(-25, 25, 50000)
    left = assert_as_the_rule(values, single)
    magnitude = np.abs(values.astype(np.float32) if single else values)
    inside = ((magnitude >= 1e-17) & (magnitude < 1e9) if single else
              (magnitude >= 1e-11) & (magnitude < 1e17))
    assert left.size < 0.05 * inside.sum() + (~inside).sum()  # outside: left


@pytest.mark.parametrize("single", [False, True])
def test_short_and_whole_numbers(single: bool) -> None:
    # "%g" reads these back: six digits or fewer, whole numbers with ".0", exponents
    rng = np.random.default_rng(3)
    values = np.array([round(v, int(d)) for v, d in zip(rng.random(20000),
                                                         rng.integers(0, 8, 20000))])
    assert_as_the_rule(values, single)
    assert_as_the_rule(rng.integers(-10 ** 7, 10 ** 7, 20000).astype(np.float64), single)
    assert_as_the_rule(rng.integers(1, 10 ** 6, 20000) * 10.0 ** rng.integers(-12, 12, 20000),
                       single)


@pytest.mark.parametrize("single", [False, True])
def test_powers_of_ten_their_neighbours_and_midpoints(single: bool) -> None:
    powers = 10.0 ** np.arange(-30, 30)
    values = np.concatenate([powers, -powers, np.nextafter(powers, 0),
                             np.nextafter(powers, np.inf), [
                                 0.1 * 3, 2.0 / 3, 1 - 2.0 ** -53, 1 + 2.0 ** -52,
                                 123456789012345.67, 4503599627370495.5, 999999.5, 9999995.0,
                                 0.5, 1.5, 2.5, 123456.5, 1234565.0, 1234567890123456.5,
                                 1000000000000000.25, 9.999999999999998]])
    assert_as_the_rule(values, single)


def test_zeros_and_non_finite_values() -> None:
    values = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7e308, -1e-300])
    cells, left = digits.float_cells(values, False)
    assert cells[:2].tolist() == [b"0.0", b"-0.0"]
    assert sorted(left.tolist()) == [2, 3, 4, 5, 6, 7]  # past the exponents printed here


@pytest.mark.parametrize("others", [1, digits.FEW_OTHERS, digits.FEW_OTHERS + 1, 150])
@pytest.mark.parametrize("single", [False, True])
def test_probabilities_with_a_few_of_another_layout(others: int, single: bool) -> None:
    # a few values over one or under 1e-4 are left to the rule, more take numpy's layouts
    rng = np.random.default_rng(others)
    values = rng.random(200) * 0.9 + 0.05
    values[:others] = (1 + rng.random(others)) * 10.0 ** rng.choice([-7, -5, 1, 3], others)
    values[others] = 0.0
    order = rng.permutation(200)
    values = values[order]
    assert_as_the_rule(values, single)
    cells, _ = digits.float_cells(values.astype(np.float32).astype(np.float64) if single
                                  else values, single)
    of_others = cells[np.flatnonzero(order < others)]
    assert (of_others == b"").all() == (others <= digits.FEW_OTHERS)
    assert (of_others != b"").any() == (others > digits.FEW_OTHERS)
    printed = values.astype(np.float32) if single else values
    assert printing.float_texts(printed) == [digits.write_decimal(value, single)
                                             for value in printed.tolist()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1,
                max_size=64))
def test_any_doubles(numbers: list[float]) -> None:
    assert_as_the_rule(np.array(numbers, dtype=np.float64))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1,
                max_size=64))
def test_any_floats(numbers: list[float]) -> None:
    assert_as_the_rule(np.array(numbers, dtype=np.float64), single=True)


def test_float_texts_of_large_arrays_are_value_by_value() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(5000)
    values[::7] = np.round(values[::7], 3)  # six digits or fewer: "%g"
    values[::11] = np.floor(values[::11] * 1e6)  # whole numbers: ".0"
    values[::13] *= 10.0 ** rng.integers(-30, 30, values[::13].size)  # exponents
    values[5], values[6], values[7] = np.nan, np.inf, -0.0
    expected = [digits.write_decimal(value, False) for value in values.tolist()]
    assert printing.float_texts(values) == expected
    assert printing.float_texts(values.reshape(50, 100)) == expected
    single = values.astype(np.float32)
    assert printing.float_texts(single) == [digits.write_decimal(value, True)
                                            for value in single.tolist()]


def assert_percent_as_the_rule(values: Tensor, single: bool) -> None:
    if single:
        values = values.astype(np.float32).astype(np.float64)
    numbers = values.tolist()
    assert digits.percent_texts(numbers, single) == [
        digits.write_decimal(value, single) for value in numbers]


@pytest.mark.parametrize("single", [False, True])
def test_percent_texts_follow_the_rule(single: bool) -> None:
    rng = np.random.default_rng(4)
    tiny = np.finfo(np.float32 if single else np.float64)
    kinds = [
        rng.random(300),  # probabilities: the long form
        np.round(rng.random(300), 3),  # "%g" reads back
        rng.integers(-10 ** 7, 10 ** 7, 300).astype(np.float64),  # whole numbers: ".0"
        (rng.random(300) - 0.5) * 10.0 ** rng.integers(-40, 38, 300),  # exponents
        np.array([0.0, -0.0, 1.0, -1.0, 1e6, 1e-5, 123456.5, 999999.5, 9999995.0,
                  float(tiny.max), -float(tiny.max), float(tiny.tiny), float(tiny.smallest_subnormal)]),
    ]
    for values in kinds:
        assert_percent_as_the_rule(values, single)


def test_percent_texts_leave_non_finite_values() -> None:
    for value in (np.nan, np.inf, -np.inf):
        assert digits.percent_texts([0.5, value], False) is None
        assert digits.percent_texts([value, 0.5], True) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1,
                max_size=400), st.booleans())
def test_percent_texts_of_any_finite_values(numbers: list[float], single: bool) -> None:
    assert_percent_as_the_rule(np.array(numbers, dtype=np.float64), single)


@pytest.mark.parametrize("size", [65, 200, 383, 384, 600])
def test_float_texts_of_float32_arrays_of_every_size(size: int) -> None:
    rng = np.random.default_rng(size)
    values = (rng.random(size) * 10.0 ** rng.integers(-8, 8, size)).astype(np.float32)
    values[::9] = np.round(values[::9], 2)
    values[1] = -0.0
    expected = [digits.write_decimal(value, True) for value in values.tolist()]
    assert printing.float_texts(values) == expected
    values[3] = np.nan  # not finite: numpy's path, the same texts
    assert printing.float_texts(values)[3] == "NaN"
    assert printing.float_texts(values)[4:] == expected[4:]
