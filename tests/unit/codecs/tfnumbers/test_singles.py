"""``singles.single_text`` prints a float32 array as TF Serving's ``WriteDecimal`` would,
value by value (``digits.write_decimal`` is the rule), nested as the array is."""

from __future__ import annotations

import numpy as np
import pytest

from flask_predict.codecs.tfnumbers import digits, singles, writer as printing


def rule_text(array: np.ndarray) -> bytes:
    texts = [digits.write_decimal(value, True) for value in np.ravel(array).tolist()]
    template = "[" + ",".join([printing.row_template(array.shape[1:])] * len(array)) + "]"
    return (template % tuple(texts)).encode("ascii")


def in_range(values: np.ndarray) -> np.ndarray:
    """The float32 *values* from 1e-14 up to 1e26 in magnitude, and zeros: what is scaled."""
    with np.errstate(all="ignore"):
        magnitude = np.abs(values.astype(np.float64))
    kept: np.ndarray = values[((magnitude >= 1e-14) & (magnitude < 1e26)) | (magnitude == 0)]
    return kept


@pytest.mark.parametrize("seed", range(6))
def test_random_bit_patterns_follow_the_rule(seed: int) -> None:
    bits = np.random.default_rng(seed).integers(0, 2 ** 32, 40000, dtype=np.uint64)
    values = in_range(bits.astype(np.uint32).view(np.float32))
    assert values.size > 15000
    assert singles.single_text(values) == rule_text(values)


@pytest.mark.parametrize("shape", [(200,), (100, 3), (10, 4, 5)])
def test_every_layout_in_any_shape(shape: tuple[int, ...]) -> None:
    """Fixed notation, exponents (below 1e-4, from the digits shown on), six digits that
    read back, whole numbers, signs and zeros, nested as the array is."""
    rng = np.random.default_rng(sum(shape))
    count = int(np.prod(shape))
    values = (rng.normal(size=count) * 10.0 ** rng.integers(-12, 20, count)).astype(np.float32)
    values[::7] = rng.integers(-10 ** 6, 10 ** 6, values[::7].size) * np.float32(1e-3)
    values[::11] = rng.integers(-100, 100, values[::11].size)  # whole numbers, zeros
    values[::13] = -0.0
    array = values.reshape(shape)
    assert singles.single_text(array) == rule_text(array)


def test_ties_and_edges_of_each_layout() -> None:
    """Exact ties at the ninth digit (float32 values over 1,000 have few fraction bits),
    values that round up into the next decade, the ends of fixed notation, and their
    neighbours; then the values the rule prints (not finite, out of the scaled range)
    among many exponents laid out in numpy, and among a few printed by the rule."""
    edges = np.array([7049.7344, 312111.81, 1836281.4, 9.9999997e-5, 1e-4, 999999.94,
                      999999.5, 1e6, 123456.0, 1e9, 2e25, 0.1, 2.5, 1.0, 10.0, -1.8214683e-05,
                      1.1e-14], dtype=np.float32)
    values = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)),
                             np.nextafter(edges, np.float32(-np.inf)),
                             np.array([0.0, -0.0], dtype=np.float32)] * 10)
    assert singles.single_text(values) == rule_text(values)
    ruled = np.array([np.nan, np.inf, -np.inf, 3.4028235e38, 1e-45, 5e-15, -1e30],
                     dtype=np.float32)
    mixed = np.concatenate([values, ruled])
    assert singles.single_text(mixed) == rule_text(mixed)
    few = np.concatenate([np.full(50, 0.25, dtype=np.float32), ruled, edges[-2:]])
    assert singles.single_text(few) == rule_text(few)


def test_probabilities_with_many_exponents() -> None:
    """A classifier's probabilities, a twentieth of them under 1e-4: those are laid out in
    numpy (``1.82146832e-05``), not one by one."""
    rng = np.random.default_rng(3)
    values = (1 / (1 + np.exp(-rng.normal(size=(5000, 2)) * 6))).astype(np.float32)
    assert np.count_nonzero(values < 1e-4) > digits.FEW_OTHERS
    assert singles.single_text(values) == rule_text(values)


def test_too_many_values_for_the_rule_are_left_to_the_caller() -> None:
    values = np.full(300, 0.5, dtype=np.float32)
    values[:digits.FEW_OTHERS] = 1e-30  # below the scaled range: each printed by the rule
    assert singles.single_text(values) == rule_text(values)
    values[digits.FEW_OTHERS] = np.nan
    assert singles.single_text(values) is None
    assert printing.array_text(values).encode("ascii") == rule_text(values)


def test_tf_serving_printing_takes_it_from_its_size_on(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def spy(array: np.ndarray) -> bytes | None:
        calls.append(array.size)
        return singles.single_text(array)

    monkeypatch.setattr(printing, "single_text", spy)
    rng = np.random.default_rng(4)
    for count in (printing._SINGLES_FROM - 1, printing._SINGLES_FROM, 5000):
        values = rng.random((count, 1), dtype=np.float32)
        assert printing.array_text(values).encode("ascii") == rule_text(values)
        assert printing.float_texts(values) == rule_text(values.ravel())[1:-1].decode().split(",")
    assert calls == [printing._SINGLES_FROM] * 2 + [5000] * 2


@pytest.mark.parametrize("shape", [(70000, 2), (2, 70000)])
def test_blocks_of_whole_rows(shape: tuple[int, ...]) -> None:
    """Past :data:`digits.BLOCK` values the array is printed a block of whole rows at a
    time (a row longer than a block is a block of its own), each block's values that the
    rule prints counted in that block."""
    rng = np.random.default_rng(5)
    values = (1 / (1 + np.exp(-rng.normal(size=shape) * 6))).astype(np.float32)
    flat = values.reshape(-1)
    flat[::9000] = np.nan  # 16 in all: a few in each block
    assert singles.single_text(values) == rule_text(values)
    flat[:digits.FEW_OTHERS + 1] = np.nan  # too many in the first block
    assert singles.single_text(values) is None


def test_tf_servings_own_test_vectors() -> None:
    """``json_tensor_test.cc`` (``FromJsonSingleFloatTensorSixDigitPrecision``), repeated
    past the size the printer takes and past the number of exponents the rule prints."""
    vectors = {np.float32(0.5) * np.float32(0.1) + np.float32(2): "2.05", 3: "3.0",
               3.5: "3.5", np.float32(1) / np.float32(3): "0.333333343", 9000000: "9e+06",
               0.00003: "3e-05", 999999: "999999.0", 555557.5: "555557.5",
               123456789: "123456792.0", -0.0: "-0.0"}
    values = np.tile(np.array(list(vectors), dtype=np.float32), 20)
    expected = ",".join(list(vectors.values()) * 20)
    assert singles.single_text(values) == f"[{expected}]".encode("ascii")


def test_an_orjson_that_lays_numbers_out_otherwise_leaves_printing_to_the_rest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """This orjson prints the probes as the module reads them; were it not so, nothing is
    printed here, and TF Serving's text still comes out of the other paths."""
    assert singles.LAYOUT_AS_READ
    values = np.random.default_rng(6).random((300, 2), dtype=np.float32)
    monkeypatch.setattr(singles, "LAYOUT_AS_READ", False)
    assert singles.single_text(values) is None
    assert printing.array_text(values).encode("ascii") == rule_text(values)
