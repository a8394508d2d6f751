"""TF Serving's JSON writer: numbers printed as ``WriteDecimal`` in ``json_tensor.cc`` prints
them: ``%g`` when those six digits read back as the same value in the tensor's own
precision, else ``%.9g`` (float32) or ``%.17g`` (float64), and ``.0`` after a whole number
not written with an exponent: ``9e+06``, ``2.05``, ``3.0``, ``0.333333343``. A float32 array
of 128 values or more is printed by :mod:`.singles` in one orjson print, float64
probabilities by :mod:`.below_one`, and an answer of :data:`.cells.GRID_FROM` numbers or
more is laid out by :mod:`.cells` in numpy, with the same text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from ...types import Tensor
from ..dtypes import FLOAT32, FLOAT64, FLOATS
from ..printing import dumps
from . import digits
from .below_one import fraction_rows, fraction_texts
from .cells import GRID_FROM, block, lines_text
from .digits import print_floats, write_decimal
from .singles import single_text


class Raw(str):
    """JSON text already printed: :func:`dumps_tfserving` writes it as it is."""


_SMALL = 64
"""Arrays up to this size are printed number by number (numpy's fixed cost is larger)."""
_PERCENT_BELOW = 384
"""float32 arrays past :data:`_SMALL` and below this size are printed by
:func:`digits.percent_texts` (a request of 300 values: 0.93x the CPU of numpy's path; of
500: 1.03x)."""
_SINGLES_FROM = 128
"""float32 arrays from this size on are printed by :func:`singles.single_text` (200 values:
0.44x-0.70x the CPU of :func:`digits.percent_texts`; 10,000: 0.43x of the grid's; below
this size it costs more than the ``%`` path for some arrays)."""


def float_texts(array: Tensor) -> list[str]:
    """Each element of float32/float64 *array*, flattened, as TF Serving prints it: the
    rule number by number for a few, float32 from :data:`_SINGLES_FROM` values on by
    :func:`singles.single_text`, a few hundred float32 it leaves by
    :func:`digits.percent_texts`, float64 between 1e-11 and 1 (probabilities) by
    :func:`below_one.fraction_texts`, else :func:`digits.print_floats`."""
    single = array.dtype == FLOAT32
    if array.size <= _SMALL or not digits.VECTORISED:  # tolist: float32 values as doubles
        return [write_decimal(value, single) for value in array.ravel().tolist()]
    text = _singles(array.ravel())
    if text is not None:
        return text[1:-1].decode("ascii").split(",")
    values = array.ravel().astype(np.float64, copy=False)
    if single and values.size < _PERCENT_BELOW:
        percent = digits.percent_texts(values.tolist(), single)
        if percent is not None:
            return percent
    if not single:
        fractions = fraction_texts(values)
        if fractions is not None:
            return fractions
    cells = print_floats(values, single)
    texts: list[str] = b",".join(cells.tolist()).decode("ascii").split(",")
    return texts


def row_texts(array: Tensor) -> list[str] | None:
    """Each row of a 2-D float64 *array* of more than :data:`_SMALL` values (a classifier's
    probabilities) as its numbers' texts joined by commas, as TF Serving prints them, by
    :func:`below_one.fraction_rows`: a template's ``[%s]`` takes a row whole. ``None``
    where that does not print it (the caller prints its numbers one by one)."""
    if (array.dtype != FLOAT64 or array.ndim != 2 or array.shape[1] < 2
            or array.size <= _SMALL or not digits.VECTORISED):
        return None
    return fraction_rows(array)


def _singles(array: Tensor) -> bytes | None:
    """*array*'s text from :func:`singles.single_text` when it is float32 of
    :data:`_SINGLES_FROM` values or more (and numpy has the string functions it uses)."""
    if array.dtype != FLOAT32 or array.size < _SINGLES_FROM or not digits.VECTORISED:
        return None
    return single_text(array)


def array_text(array: Tensor) -> str:
    """*array* as nested JSON lists (a 0-d array as a bare value), floats TF Serving's way:
    float32 from :data:`_SINGLES_FROM` values on in one orjson print (:mod:`singles`), else
    a grid of its rows (:mod:`cells`) from :data:`cells.GRID_FROM` numbers on, else every
    element's text in a ``%s`` template of a row (:func:`fill_rows`)."""
    if array.ndim == 0:
        return element_texts(array)[0]
    text = _singles(array)
    if text is not None:
        return text.decode("ascii")
    if array.size >= GRID_FROM:
        lines = block(array)
        if lines is not None:
            return lines_text([lines], len(array)).decode("ascii")
    rows = row_texts(array)
    if rows is not None:
        return "[[" + "],[".join(rows) + "]]"
    return fill_rows(row_template(array.shape[1:]), len(array), element_texts(array))


@functools.lru_cache(maxsize=256)
def row_template(shape: tuple[int, ...]) -> str:
    """A ``%s`` for each element of an array of *shape*, nested as JSON lists."""
    if not shape:
        return "%s"
    return "[" + ",".join([row_template(shape[1:])] * shape[0]) + "]"


def fill_rows(row: str, count: int, texts: list[str]) -> str:
    """``[<row>,<row>,...]``, *count* rows of the ``%``-template *row*, its ``%s`` filled
    with *texts* in order: what ``("[" + ",".join([row] * count) + "]") % tuple(texts)``
    answers, in one join of the texts and the template's pieces. ``%`` reads the whole
    template for every answer (130k instructions for 100 rows of two outputs, a third of
    what printing their numbers costs); the join copies each text once (24k). One row is
    filled by ``%`` itself: its template is short, and there the join costs twice as much."""
    if row == "%s":  # a row of one number: the texts alone
        return "[" + ",".join(texts) + "]"
    if count == 1:  # the usual online answer: one short template, where % costs half
        return "[" + row % tuple(texts) + "]"
    first, *pieces = _row_pieces(row)
    if not count or not pieces:  # no rows, or rows without a slot
        return "[" + ",".join([first] * count) + "]"
    last = pieces.pop()
    literals = [*pieces, last + "," + first] * count  # each row's pieces, then the next's
    literals[-1] = last + "]"
    parts = ["[" + first] * (2 * len(texts) + 1)
    parts[1::2] = texts
    parts[2::2] = literals
    return "".join(parts)


_SLOT_OR_PERCENT = re.compile("(%s|%%)")


@functools.lru_cache(maxsize=256)
def _row_pieces(row: str) -> tuple[str, ...]:
    """The text around each ``%s`` of the ``%``-template *row* (one more than its slots),
    each ``%%`` in it read as ``%``."""
    pieces: list[str] = []
    piece = ""
    for token in _SLOT_OR_PERCENT.split(row):
        if token == "%s":
            pieces.append(piece)
            piece = ""
        else:
            piece += "%" if token == "%%" else token
    pieces.append(piece)
    return tuple(pieces)


def element_texts(array: Tensor) -> list[str]:
    """Each element's JSON text, flattened row-major."""
    if array.dtype in FLOATS:
        return float_texts(array)
    if array.dtype.kind in "iu" and array.size <= _SMALL:
        return list(map(str, array.ravel().tolist()))
    if array.dtype.kind in "biu":  # orjson prints the whole array in C: split its text
        if not array.size:
            return []
        text = orjson.dumps(array.ravel(), option=orjson.OPT_SERIALIZE_NUMPY).decode()
        return text[1:-1].split(",")
    return [orjson.dumps(v, option=orjson.OPT_SERIALIZE_NUMPY).decode()
            for v in array.ravel().tolist()]


def shortest_texts(array: Tensor) -> list[str]:
    """Each element of numeric *array*, flattened row-major, as :func:`dumps` prints the
    array: the shortest text that reads back, ``NaN`` and ``Infinity`` as tokens."""
    if not array.size:
        return []
    return dumps(array.ravel()).decode("ascii")[1:-1].split(",")


def dumps_tfserving(obj: Any, exact: bool = True) -> bytes:
    """Print *obj* (dicts, lists, numpy arrays and scalars, :class:`Raw` text) as TF
    Serving prints a response; numbers as its ``WriteDecimal`` does (*exact*), else as
    :func:`dumps` prints them, their shortest text (a top-level object's :class:`Raw`
    values still written as they are)."""
    if exact:
        return _tf_text(obj).encode("utf-8")
    if isinstance(obj, Raw):
        return obj.encode("utf-8")
    if isinstance(obj, Mapping) and any(isinstance(value, Raw) for value in obj.values()):
        return b"{" + b",".join(_key(key).encode("utf-8") + b":" + dumps_tfserving(value, False)
                                for key, value in obj.items()) + b"}"
    return dumps(obj)


def _tf_text(obj: Any) -> str:
    if isinstance(obj, Raw):
        return str(obj)
    if isinstance(obj, Mapping):
        return "{" + ",".join(f"{_key(k)}:{_tf_text(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(_tf_text(v) for v in obj) + "]"
    if isinstance(obj, np.ndarray):
        return array_text(obj)
    if isinstance(obj, float) or (isinstance(obj, np.floating) and obj.dtype in (
            np.float32, np.float64)):
        return float_texts(np.asarray(obj))[0]
    text: bytes = orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)
    return text.decode("utf-8")


def _key(key: Any) -> str:
    return orjson.dumps(str(key)).decode("utf-8")
