"""A batch job's local JSON lines read a byte range at a time (``flask_predict.batch.ranges``):
every line read once and in order wherever the cuts fall, and a pool whose workers read
their own ranges writing the very bytes one process writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from flask_predict import batch
from flask_predict.api import Model
from flask_predict.batch import ranges, reading
from flask_predict.models.demo import train_iris
from tests.routines import IRIS_ROWS

ROWS = [json.dumps(row).encode() for row in IRIS_ROWS]
LINES = [ROWS[0], b"", ROWS[1] + b"\r", b"  \r", b"{not json", b"[1, 2]", ROWS[2],
         b'[5.1,3.5,1.4,0.2],[6,3,5,2]', b"[" + b",".join([b"0.5"] * 60) + b"]",
         b"  " + ROWS[0], ROWS[1]]
"""Lines of every kind: rows, blank lines, a CRLF line end, lines that are not JSON or not
one row, a long one that straddles several cuts, a row with spaces around it."""
TEXT = b"\n".join(LINES * 4)


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranges") / "iris"
    train_iris(root)
    return root


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n"], ids=["no-newline", "lf", "crlf"])
@pytest.mark.parametrize("range_bytes", [1, 2, 3, 7, 64, 1 << 22])
def test_ranges_hold_each_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    range_bytes: int, ending: bytes) -> None:
    """Cut anywhere, a file's ranges hold its bytes once, in order, each range whole
    lines: a line straddling a cut belongs to the range it starts in."""
    text = TEXT + ending
    (tmp_path / "in.jsonl").write_bytes(text)
    monkeypatch.setattr(ranges, "RANGE_BYTES", range_bytes)
    monkeypatch.setattr(ranges, "SCAN_BYTES", 2)  # a line's end found over several reads
    cut = ranges.ranges(str(tmp_path / "in.jsonl"), len(text))
    assert len(cut) == -(-len(text) // range_bytes)
    buffer = memoryview(bytearray(5))
    pieces = [b"".join(map(bytes, ranges.range_blocks(part, buffer))) for part in cut]
    assert b"".join(pieces) == text
    held = [piece for piece in pieces if piece]
    assert all(piece.endswith(b"\n") for piece in held[:-1])
    starts = {0} | {i + 1 for i, byte in enumerate(text) if byte == ord("\n")}
    offsets = [sum(map(len, pieces[:i])) for i in range(len(pieces)) if pieces[i]]
    assert set(offsets) <= starts


@pytest.mark.parametrize("block_bytes", [1, 5, 16, 1 << 22])
def test_chunks_keep_their_lines_while_later_blocks_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int) -> None:
    """The blocks of a range (or a whole file) are read into one buffer, again and again;
    the chunks made of them, all taken before any is looked at, still hold their own
    lines."""
    (tmp_path / "in.jsonl").write_bytes(TEXT)
    monkeypatch.setattr(reading, "BLOCK_BYTES", block_bytes)
    whole = ranges.Range(str(tmp_path / "in.jsonl"), 0, len(TEXT))
    for chunks in (list(reading.range_chunks(whole, 3)),
                   list(reading.chunks(batch.expand([str(tmp_path / "in.jsonl")])[0], 3))):
        assert b"".join(chunk.text for chunk in chunks) == TEXT
        assert [len(chunk.ends) for chunk in chunks] == [3] * 14 + [2]
        assert all(chunk.text.count(b"\n") == len(chunk.ends) for chunk in chunks[:-1])


def test_line_ends_are_every_newline() -> None:
    """Newlines found 8 bytes at a time, with the byte-wise search for words holding more
    than one, are each newline of the text, wherever it falls in its word."""
    rng = np.random.default_rng(7)
    for length in [*range(0, 40), 4099]:
        for density in (0.02, 0.2, 0.6):
            text = np.where(rng.random(length) < density, ord("\n"), ord("1")).astype(np.uint8)
            for block in (text.tobytes(), memoryview(text.tobytes())[1:]):
                expected = [i for i, byte in enumerate(bytes(block)) if byte == ord("\n")]
                assert reading._newlines(block).tolist() == expected


def test_a_pool_writes_the_bytes_one_process_writes(iris: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Two and three workers reading their own ranges (cut every 50 bytes, read 16 at a
    time), with a CSV file between two JSON lines files (its chunks read by the job and
    sent to the workers), write the bytes and counts of one process reading whole files;
    a killed run's leftovers are replaced, and nothing is left beside the output."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "a.jsonl").write_bytes(TEXT)
    (inputs / "b.csv").write_text("a,b,c,d\n" + "".join(
        ",".join(map(str, row)) + "\n" for row in IRIS_ROWS) + "1,2\n")
    (inputs / "c.jsonl").write_bytes(TEXT.replace(b"\n", b"\r\n") + b"\r\n")
    with Model.load(iris, warm=False) as model:
        one = tmp_path / "one" / "out.jsonl"
        expected = batch.run(model, batch.expand([str(inputs)]), str(one), chunk_size=3)
        assert expected.errors > 0 and expected.blank > 0
        monkeypatch.setattr(ranges, "RANGE_BYTES", 50)
        monkeypatch.setattr(reading, "BLOCK_BYTES", 16)
        for processes in (2, 3):
            out = tmp_path / str(processes) / "out.jsonl"
            out.parent.mkdir()
            (out.parent / ".out.jsonl.partial").write_text("a killed run's\n")
            (out.parent / ".out.jsonl.parts").mkdir()
            (out.parent / ".out.jsonl.parts" / "000000001").write_text("a killed run's\n")
            summary = batch.run(model, batch.expand([str(inputs)]), str(out),
                                processes=processes, chunk_size=3)
            assert out.read_bytes() == one.read_bytes()
            assert (summary.predictions, summary.errors, summary.blank) == (
                expected.predictions, expected.errors, expected.blank)
            assert os.listdir(out.parent) == ["out.jsonl"]


def test_crlf_lines_answer_as_lf_lines(iris: Path, tmp_path: Path) -> None:
    """A file of rows with CRLF line ends scores, through the matrix door, into the bytes
    of the same rows with LF ends."""
    rows = b"".join(row + b"\n" for row in ROWS * 50)
    (tmp_path / "lf.jsonl").write_bytes(rows)
    (tmp_path / "crlf.jsonl").write_bytes(rows.replace(b"\n", b"\r\n"))
    with Model.load(iris) as model:
        for name in ("lf", "crlf"):
            summary = batch.run(model, batch.expand([str(tmp_path / f"{name}.jsonl")]),
                                str(tmp_path / f"{name}.out"), chunk_size=40)
            assert summary.predictions == 150 and summary.errors == 0
    lf = (tmp_path / "lf.out").read_bytes()
    assert (tmp_path / "crlf.out").read_bytes() == lf
    assert lf.startswith(b'{"instance":%b,"prediction":' % ROWS[0])
