"""The TF Serving row answer of several outputs, printed as TF Serving prints it."""

from __future__ import annotations

import json

import numpy as np

from flask_predict import codecs
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
    rows = ["{" + ",".join(f"{json.dumps(name)}:{codecs.array_text(array[i])}"
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
