"""``digits.significant_texts`` prints what C's ``%.17g`` prints, or leaves the value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flask_predict.codecs import digits, printing
from flask_predict.types import Tensor

pytestmark = pytest.mark.skipif(not digits.EXACT, reason="long double is a double here")


def assert_as_printf(values: Tensor, count: int = 17) -> Tensor:
    """Every text answered equals ``%.<count>g``; the indices left to ``%``."""
    texts, left = digits.significant_texts(values, count)
    assert len(texts) == values.size
    skipped = set(left.tolist())
    for index, value in enumerate(values.tolist()):
        if index in skipped:
            assert texts[index] == ""
        else:
            assert texts[index] == "%.*g" % (count, value), value
    return left


def test_probabilities_are_printed_here_nearly_all() -> None:
    values = np.random.default_rng(1).random(50000)
    left = assert_as_printf(values[values != 0])
    assert left.size < 0.05 * values.size


def test_every_magnitude_and_sign() -> None:
    rng = np.random.default_rng(2)
    values = (rng.random(50000) - 0.5) * 10.0 ** rng.integers(-7, 19, 50000)
    values = values[(values != 0) & (values != np.floor(values))]
    left = assert_as_printf(values)
    magnitude = np.abs(values)
    inside = (magnitude >= 1e-4) & (magnitude < 1e16)
    assert left.size < 0.05 * inside.sum() + (~inside).sum()  # outside: exponents, left


def test_powers_of_ten_and_their_neighbours() -> None:
    powers = 10.0 ** np.arange(-5, 17)
    values = np.concatenate([powers, np.nextafter(powers, 0), np.nextafter(powers, np.inf),
                             -np.nextafter(powers, 0), [0.1 * 3, 2.0 / 3, 1 - 2.0 ** -53,
                             1 + 2.0 ** -52, 123456789012345.67, 4503599627370495.5]])
    assert_as_printf(values[values != np.floor(values)])


def test_midpoints_at_the_seventeenth_digit_are_left_or_right() -> None:
    # exact binary fractions whose 17-digit rounding is a tie: printf rounds them half-even
    values = np.array([1234567890123456.5, 0.5 + 2.0 ** -53 * 3, 2.0 ** -20 + 2.0 ** -60,
                       1000000000000000.25, 1.0000000000000002, 9.999999999999998])
    assert_as_printf(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1,
                max_size=64))
def test_any_doubles(numbers: list[float]) -> None:
    values = np.array(numbers, dtype=np.float64)
    assert_as_printf(values[(values != 0) & (values != np.floor(values))])


def test_tfserving_printing_of_large_arrays_is_value_by_value() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(5000)
    values[::7] = np.round(values[::7], 3)  # six digits or fewer: "%g"
    values[::11] = np.floor(values[::11] * 1e6)  # whole numbers: ".0"
    values[::13] *= 10.0 ** rng.integers(-30, 30, values[::13].size)  # exponents
    values[5], values[6], values[7] = np.nan, np.inf, -0.0
    expected = [printing._write_decimal(value, False) for value in values.tolist()]
    assert printing.float_texts(values) == expected
    assert printing.float_texts(values.reshape(50, 100)) == expected
