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
