"""``codecs.cells``: TF Serving's JSON of large numeric answers, laid out as a grid, is the
same text the string path prints."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from flask_predict import codecs
from flask_predict.codecs import tfnumbers
from flask_predict.codecs.tfnumbers import cells, digits, writer as printing
from flask_predict.protocols.tfserving import wire
from flask_predict.types import Tensor

pytestmark = pytest.mark.skipif(not digits.VECTORISED,
                                reason="no 64-bit long double or numpy string functions here")


def random_outputs(rng: np.random.Generator, batch: int) -> dict[str, Tensor]:
    """One to three outputs of *batch* rows: floats of every kind, integers, booleans."""
    outputs: dict[str, Tensor] = {}
    for index in range(int(rng.integers(1, 4))):
        shape: tuple[int, ...] = (batch,) if rng.random() < 0.5 else (
            batch, int(rng.integers(0, 5)))
        kind = int(rng.integers(0, 6))
        if kind == 0:
            array: Tensor = rng.random(shape)
        elif kind == 1:
            array = (rng.standard_normal(shape) * 10.0 ** rng.integers(-20, 20, shape)
                     ).astype(np.float32)
        elif kind == 2:
            array = rng.integers(-10 ** 12, 10 ** 12, shape)
        elif kind == 3:
            array = rng.random(shape) < 0.5
        elif kind == 4:  # NaN, infinities, zeros of both signs
            array = rng.random(shape)
            array[array < 0.1] = np.nan
            array[array > 0.95] = np.inf
            array[(array > 0.5) & (array < 0.52)] = 0.0
            array[(array > 0.6) & (array < 0.65)] *= -1
            array[(array > 0.7) & (array < 0.72)] = -0.0
        else:
            array = rng.integers(0, 3, shape).astype(np.uint8)
        outputs[f'out{index}"%s'] = array  # names JSON must escape; a % a template must not
    return outputs


def both_ways(monkeypatch: pytest.MonkeyPatch, encode: Any) -> tuple[bytes, bytes]:
    """*encode()* printed by the string path and by the grid path."""
    monkeypatch.setattr(cells, "GRID_FROM", 10 ** 9)
    monkeypatch.setattr(tfnumbers, "GRID_FROM", 10 ** 9)
    monkeypatch.setattr(printing, "GRID_FROM", 10 ** 9)
    strings = codecs.dumps_tfserving(encode())
    monkeypatch.setattr(tfnumbers, "GRID_FROM", 1)
    monkeypatch.setattr(printing, "GRID_FROM", 1)
    grid = codecs.dumps_tfserving(encode())
    return strings, grid


@pytest.mark.parametrize("seed", range(40))
def test_the_grid_prints_what_the_strings_print(monkeypatch: pytest.MonkeyPatch,
                                                 seed: int) -> None:
    rng = np.random.default_rng(seed)
    outputs = random_outputs(rng, int(rng.integers(1, 300)))
    strings, grid = both_ways(monkeypatch, lambda: wire.encode_predict(outputs, True))
    assert grid == strings
    first = next(iter(outputs.values()))
    strings, grid = both_ways(monkeypatch, lambda: {"predictions": first})
    assert grid == strings


def test_a_classifier_answer_reads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    p = np.random.default_rng(7).random(2000)
    outputs = {"predict": (p > 0.5).astype(np.int64), "predict_proba": np.stack([1 - p, p], 1)}
    strings, grid = both_ways(monkeypatch, lambda: wire.encode_predict(outputs, True))
    assert grid == strings
    rows = json.loads(grid)["predictions"]
    assert [row["predict"] for row in rows] == outputs["predict"].tolist()
    assert np.array_equal([row["predict_proba"] for row in rows], outputs["predict_proba"])


def test_large_answers_are_printed_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digits, "BLOCK", 100)
    rng = np.random.default_rng(11)
    outputs = {"x": rng.random((700, 3)), "y": rng.random(700).astype(np.float32)}
    outputs["x"][::97] = np.nan
    strings, grid = both_ways(monkeypatch, lambda: wire.encode_predict(outputs, True))
    assert grid == strings
    expected = [digits.write_decimal(v, False) for v in outputs["x"].ravel().tolist()]
    assert printing.float_texts(outputs["x"]) == expected


def test_without_numpy_string_functions_every_number_is_printed_by_the_rule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = random_outputs(np.random.default_rng(12), 700)
    expected = codecs.dumps_tfserving(wire.encode_predict(outputs, True))
    monkeypatch.setattr(digits, "VECTORISED", False)
    assert cells.block(np.arange(700.0)) is None
    assert codecs.dumps_tfserving(wire.encode_predict(outputs, True)) == expected


def test_output_names_in_any_script(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = {"größe": np.arange(600.0), "名前": np.arange(600)}
    strings, grid = both_ways(monkeypatch, lambda: wire.encode_predict(outputs, True))
    assert grid == strings
    assert json.loads(grid)["predictions"][599] == {"größe": 599.0, "名前": 599}


def test_integers_of_every_size_and_sign() -> None:
    values = np.array([0, 1, -1, 9, 10, -10, 123456789, -(10 ** 17), 10 ** 18 - 1000],
                      dtype=np.int64)
    got = cells.number_cells(values)
    assert got is not None
    assert [cell.decode() for cell in got.tolist()] == [str(v) for v in values.tolist()]
    labels = cells.number_cells(np.array([3, 0, 9], dtype=np.uint8))
    assert labels is not None and labels.tolist() == [b"3", b"0", b"9"]


def test_what_the_grid_does_not_print_is_left_to_the_strings() -> None:
    assert cells.number_cells(np.array([10 ** 18], dtype=np.int64)) is None
    assert cells.number_cells(np.array([2 ** 64 - 1], dtype=np.uint64)) is None
    assert cells.number_cells(np.array([1.5], dtype=np.float16)) is None
    assert cells.number_cells(np.array(["a"], dtype=object)) is None
    assert cells.block(np.zeros((2, 2, 2))) is None
    big = {"big": np.array([2 ** 64 - 1] * 600, dtype=np.uint64)}
    text = codecs.dumps_tfserving(wire.encode_predict(big, True))
    assert json.loads(text) == {"predictions": [2 ** 64 - 1] * 600}


def test_booleans_empty_rows_and_empty_arrays() -> None:
    flags = cells.number_cells(np.array([True, False]))
    assert flags is not None and flags.tolist() == [b"true", b"false"]
    lines = cells.block(np.zeros((3, 0)))
    assert lines is not None
    assert cells.lines_text([lines], 3) == b"[[],[],[]]"
    numbers = cells.block(np.arange(2))
    assert numbers is not None
    assert cells.lines_text([b"{", numbers, b"}"], 2) == b"[{0},{1}]"
    assert cells.lines_text([b"{", np.zeros((0, 3), dtype=np.uint8), b"}"], 0) == b"[]"
    empty = cells.number_cells(np.zeros(0))
    assert empty is not None and empty.size == 0


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint64, np.bool_,
                                   np.float32, np.float64])
def test_small_and_large_arrays_give_each_element_the_same_text(dtype: Any) -> None:
    # arrays of a few elements take Python's own printing, larger ones orjson's or numpy's
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    rng = np.random.default_rng(5)
    if info is not None:
        values = np.concatenate([np.array([info.min, info.max, 0], dtype=dtype),
                                 rng.integers(info.min, info.max, 197, dtype=dtype,
                                              endpoint=True)])
    elif dtype is np.bool_:
        values = rng.random(200) < 0.5
    else:
        values = (rng.random(200) * 10.0 ** rng.integers(-8, 8, 200)).astype(dtype)
    whole = printing.element_texts(values)
    assert [printing.element_texts(values[i:i + 1])[0] for i in range(200)] == whole
    assert np.array([json.loads(text) for text in whole], dtype=dtype).tolist() == \
        values.tolist()


def test_a_small_row_answer_is_the_whole_body() -> None:
    outputs = {"predict": np.array([1, 0]), "predict_proba": np.array([[0.25, 0.75],
                                                                       [0.6, 0.4]])}
    for exact in (True, False):
        answer = wire.encode_predict(outputs, True, exact)
        assert isinstance(answer, tfnumbers.Raw)
        assert json.loads(codecs.dumps_tfserving(answer, exact)) == {"predictions": [
            {"predict": 1, "predict_proba": [0.25, 0.75]},
            {"predict": 0, "predict_proba": [0.6, 0.4]}]}
