"""TF Serving's number writer: JSON text with every number as TF Serving prints it
(:mod:`.writer`), and the pieces that print many numbers at numpy speed: :mod:`.digits` (a
few hundred float32 in one ``%`` each way, more at numpy speed), :mod:`.singles` (float32
arrays from 128 values on, in one orjson print), :mod:`.below_one` (float64 values between
1e-11 and 1, probabilities), :mod:`.cells` (large numeric answers laid out as a grid of those
texts, no Python string per number).

Only the TF Serving protocol prints this way; its wire code uses the names below.
"""

from __future__ import annotations

from .cells import GRID_FROM, block, lines_text
from .writer import (Raw, array_text, dumps_tfserving, element_texts, fill_rows, float_texts,
                     row_template, row_texts, shortest_texts)

__all__ = ["GRID_FROM", "Raw", "array_text", "block", "dumps_tfserving", "element_texts",
           "fill_rows", "float_texts", "lines_text", "row_template", "row_texts",
           "shortest_texts"]
