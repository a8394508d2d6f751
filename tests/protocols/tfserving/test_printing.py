"""The TF Serving row answer of several outputs, printed as TF Serving prints it."""

from __future__ import annotations

import json

import numpy as np

from flask_predict import codecs
from flask_predict.codecs import tfnumbers
from flask_predict.protocols.tfserving import wire


def test_rows_of_several_outputs_keep_every_name_and_number() -> None:
    outputs = {"label%s": np.array([1, 0, 2]), 'p"%d': np.array([[0.1, 0.9], [1.0, 0.0],
                                                                   [0.25, 1e-7]], np.float32)}
    text = codecs.dumps_tfserving(wire.encode_predict(outputs, row_format=True, exact=True))
    assert json.loads(text) == {"predictions": [
        {"label%s": 1, 'p"%d': [0.1, 0.9]}, {"label%s": 0, 'p"%d': [1.0, 0.0]},
        {"label%s": 2, 'p"%d': [0.25, 1e-7]}]}
    assert b'"label%s":1,"p\\"%d":[0.1,0.9]' in text
    assert b"[1.0,0.0]" in text  # whole floats keep their ".0", as TF Serving writes them


def row_by_row(outputs: dict[str, np.ndarray]) -> bytes:
    """The same answer printed one row and one output at a time."""
    rows = ["{" + ",".join(f"{json.dumps(name)}:{tfnumbers.array_text(array[i])}"
                           for name, array in outputs.items()) + "}"
            for i in range(len(next(iter(outputs.values()))))]
    return ('{"predictions":[' + ",".join(rows) + "]}").encode()


def test_rows_of_any_shape_print_as_row_by_row() -> None:
    rng = np.random.default_rng(5)
    for batch in (0, 1, 2, 7):
        outputs = {"labels": rng.integers(-3, 3, batch), "cube": rng.random((batch, 2, 3)),
                   "narrow": rng.random((batch, 1)).astype(np.float32),
                   "none": np.zeros((batch, 0)), "flags": rng.random((batch, 2)) > 0.5}
        text = codecs.dumps_tfserving(wire.encode_predict(outputs, row_format=True, exact=True))
        assert text == row_by_row(outputs), batch


def test_rows_mixing_bytes_and_numbers() -> None:
    outputs = {"word": np.array([b"a", b"b"], dtype=object),
               "word_bytes": np.array([b"\xff", b"c"], dtype=object), "p": np.array([0.5, 2.0])}
    text = codecs.dumps_tfserving(wire.encode_predict(outputs, row_format=True, exact=True))
    assert json.loads(text) == {"predictions": [
        {"word": "a", "word_bytes": {"b64": "/w=="}, "p": 0.5},
        {"word": "b", "word_bytes": {"b64": "Yw=="}, "p": 2.0}]}


def row_dicts(outputs: dict[str, np.ndarray]) -> bytes:
    """The shortest-numbers answer as one object per row, printed whole by ``codecs.dumps``."""
    names = list(outputs)
    columns = [list(array) if array.dtype.kind in "biuf" else codecs.json_value(array, name)
               for name, array in outputs.items()]
    return codecs.dumps({"predictions": [dict(zip(names, row)) for row in zip(*columns)]})


def shortest(outputs: dict[str, np.ndarray]) -> bytes:
    return codecs.dumps_tfserving(wire.encode_predict(outputs, row_format=True, exact=False),
                                  exact=False)


def test_shortest_rows_print_as_one_object_per_row() -> None:
    """PREDICT_TFSERVING_NUMBERS = "shortest" prints the rows of several outputs through one
    template: byte for byte what printing an object per row prints."""
    rng = np.random.default_rng(7)
    for batch in (0, 1, 2, 7, 300):
        outputs = {"labels": rng.integers(-10 ** 12, 10 ** 12, batch),
                   "p%s\"é": rng.random((batch, 2)) * 10.0 ** rng.integers(-9, 9, (batch, 1)),
                   "narrow": (rng.standard_normal((batch, 1)) * 1e-6).astype(np.float32),
                   "none": np.zeros((batch, 0)), "flags": rng.random(batch) > 0.5,
                   "word": np.array([b"w%d" % i for i in range(batch)], dtype=object)}
        assert shortest(outputs) == row_dicts(outputs), batch


def test_shortest_rows_with_nan_and_infinity_read_back_the_same() -> None:
    """A non-finite number is printed as TF Serving's token; the other outputs keep their
    values (their texts may take orjson's exponent form, 1e-5, where printing the whole
    answer again for the token would give Python's, 1e-05)."""
    outputs = {"p": np.array([np.nan, np.inf, -np.inf, 1e-5]),
               "q": np.array([[1e-5, 2.5], [0.1, 3.0], [7.0, 8.0], [1e21, -0.0]], np.float32)}
    text = shortest(outputs)
    assert b"NaN" in text and b"-Infinity" in text
    assert json.dumps(json.loads(text)) == json.dumps(json.loads(row_dicts(outputs)))
