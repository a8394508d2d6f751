"""``codecs.number_lines``: JSON lines of numbers parsed into one matrix, against the standard
library's ``json`` reading each line alone, over random numbers, widths and the lines that
must be left to the line-by-line path."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, strategies as st

from flask_predict import codecs
from flask_predict.batch.reading import line_ends
from tests.unit.codecs.test_parsing import FUZZ, numbers


def plain_numbers() -> st.SearchStrategy[str]:
    """JSON numbers a matrix takes, in their several spellings."""
    return st.one_of(
        st.integers(-2**53 + 1, 2**53 - 1).map(str),
        st.floats(-2.0**52, 2.0**52).map(repr),
        st.sampled_from(["0", "-0", "-0.0", "1e3", "-2.5E-3", "0.1e+2", "-0E-5"]))


@st.composite
def line_texts(draw: st.DrawFn) -> bytes:
    """Lines of one width of plain numbers; half the time one line is flawed: another
    width, any number token (NaN, huge integers), a value that is not a number, nesting,
    spaces or ``\\r`` around it, blank. A newline at the end or not."""
    width = draw(st.integers(1, 6))
    rows = [[draw(plain_numbers()) for _ in range(width)]
            for _ in range(draw(st.integers(1, 20)))]
    lines = ["[" + ",".join(row) + "]" for row in rows]
    flaw = draw(st.sampled_from(["none"] * 6 + ["width", "token", "value", "around",
                                                 "blank"]))
    at = draw(st.integers(0, len(lines) - 1))
    if flaw == "width":
        lines[at] = "[" + ",".join(rows[at] + [draw(plain_numbers())]) + "]"
    elif flaw == "token":
        lines[at] = "[" + ",".join([draw(numbers())] + rows[at][1:]) + "]"
    elif flaw == "value":
        value = draw(st.sampled_from(["null", "true", '"1"', "[]", "[1]", "{}"]))
        lines[at] = "[" + ",".join([value] + rows[at][1:]) + "]"
    elif flaw == "around":
        lines[at] = draw(st.sampled_from([" ", "", "\r"])) + lines[at] + draw(
            st.sampled_from([" ", "\r"]))
    elif flaw == "blank":
        lines.insert(at, draw(st.sampled_from(["", " "])))
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n"]))).encode()


@FUZZ
@given(line_texts())
def test_number_lines_answers_only_what_json_says(text: bytes) -> None:
    """Whenever it answers, row i is line i read alone, as the instances door reads it."""
    matrix = codecs.number_lines(text, line_ends(text))
    if matrix is None:
        return
    rows = [json.loads(line) for line in text.decode().splitlines()]
    expected = np.asarray(rows, dtype=np.float64)
    assert matrix.shape == expected.shape
    assert np.array_equal(matrix, expected)
    assert np.array_equal(np.signbit(matrix), np.signbit(expected))
    assert all(type(v) in (int, float) for row in rows for v in row)


@pytest.mark.parametrize("text", [
    b"[1,2]\n[3,4,5]\n[6]\n",        # ragged rows whose numbers would fill a 3x2 matrix
    b"[1,2],[3\n4,5]\n",             # a row cut over two lines, the count still matching
    b"[1,2]\n\n[3,4]\n",             # a blank line
    b"[1,2]\r\n[3,4]\r\n",           # line ends left to the caller
    b" [1,2]\n[3,4]\n",              # space before a line
    b"[1,2]\n[3,[4]]\n",             # nesting
    b"[1,NaN]\n",                    # a token only the line-by-line path reads
    b"[9007199254740993,1]\n",       # an integer from 2**53 on
    b"[1,2]\n[3,4,]\n",              # not JSON
    b"[]\n[]\n",                     # no numbers
])
def test_what_is_left_to_the_line_by_line_path(text: bytes) -> None:
    assert codecs.number_lines(text, line_ends(text)) is None


def test_lines_wider_than_64_kib_count_their_commas_exactly() -> None:
    """A line of 2**15 numbers or more holds more commas than 16 bits count."""
    wide = [[float(i % 7) for i in range(40_000)], [1.0] * 40_000]
    text = b"\n".join(json.dumps(row).replace(" ", "").encode() for row in wide)
    assert np.array_equal(codecs.number_lines(text, line_ends(text)), np.array(wide))
    ragged = b"[" + b",".join([b"0"] * 40_000) + b"]\n[" + b",".join([b"0"] * 40_001) + b"]"
    assert codecs.number_lines(ragged, line_ends(ragged)) is None
