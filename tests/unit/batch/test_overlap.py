"""One process's batch job on two cores (``flask_predict.batch.overlap``): the very bytes of
chunks scored in turn, whether a model's predictions overlap the parsing or not, whether the
lines are written behind or in turn."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from flask_predict import batch
from flask_predict.api import Model
from flask_predict.batch import output, overlap, reading
from flask_predict.batch.scoring import AS_READ, score
from flask_predict.models.demo import train_iris

PLAIN = [b"[5.1,3.5,1.4,0.2]", b"[6,3,5,2]", b"[5.9,3.0,4.2,1.5]", b"[6.7,3.0,5.2,2.3]"]
TEXT = b"\n".join(
    PLAIN * 3                                         # chunks of plain rows: the matrix door
    + [b"[1,2,3]"] * 4                                # plain rows the model refuses
    + PLAIN[:2] + [b"", b"{not json"]                 # a chunk for the instances door
    + PLAIN * 2 + [b"[5.9, 3.0, 4.2, 1.5]\r", b"[NaN,1,1,1]"] + PLAIN[:1]) + b"\n"
"""Chunks of 4 lines of every kind: plain rows, rows of the wrong width (the matrix door
parses them, the model refuses), blank and bad lines, spaces, a CRLF line end, NaN."""


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("overlap") / "iris"
    train_iris(root)
    return root


def chunks() -> list[reading.Chunk]:
    return list(reading.line_chunks([TEXT], 4))


@pytest.mark.parametrize("share", [0.0, math.inf], ids=["overlapped", "in-turn"])
def test_overlapped_or_not_the_same_lines(iris: Path, monkeypatch: pytest.MonkeyPatch,
                                          share: float) -> None:
    """Predictions on their own thread (the model's share of a chunk's time over the bar)
    or not: each chunk's lines are those :func:`score` writes for it alone, in order."""
    monkeypatch.setattr(overlap, "TIMED_CHUNKS", 1)
    monkeypatch.setattr(overlap, "OVERLAP_SHARE", share)
    with Model.load(iris) as model:
        alone = [score(model, chunk, {}) for chunk in chunks()]
        scoring = overlap.InOrder(model, {}, AS_READ)
        scored = list(scoring.scored(chunks()))
    assert [item.lines for item in scored] == [item.lines for item in alone]
    assert [(item.predictions, item.errors, item.blank) for item in scored] == [
        (item.predictions, item.errors, item.blank) for item in alone]
    assert sum(item.errors for item in scored) == 6  # the refused rows, the bad line, NaN
    if os.cpu_count() and len(os.sched_getaffinity(0)) > 1:
        assert scoring.overlapping == (share == 0.0)
        assert scoring.core_to_spare == (share != 0.0)


def test_one_core_scores_in_turn(iris: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process allowed one core never hands predictions or writes to another thread."""
    monkeypatch.setattr(overlap, "TIMED_CHUNKS", 1)
    monkeypatch.setattr(overlap, "OVERLAP_SHARE", 0.0)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})  # this thread's, where InOrder asks
    try:
        with Model.load(iris) as model:
            scoring = overlap.InOrder(model, {}, AS_READ)
            list(scoring.scored(chunks()))
    finally:
        os.sched_setaffinity(0, allowed)
    assert not scoring.spare_core and not scoring.overlapping and not scoring.core_to_spare


def test_a_job_writes_the_same_bytes_either_way(iris: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole one-process job, overlapped or not, small batches written behind: the
    same output file."""
    (tmp_path / "in.jsonl").write_bytes(TEXT * 5)
    monkeypatch.setattr(overlap, "TIMED_CHUNKS", 1)
    monkeypatch.setattr(output, "WRITE_BATCH_PIECES", 2)
    monkeypatch.setattr(output, "WRITEBACK_BYTES", 100)
    written = []
    with Model.load(iris) as model:
        for share in (0.0, math.inf):
            monkeypatch.setattr(overlap, "OVERLAP_SHARE", share)
            out = tmp_path / f"out-{share}.jsonl"
            summary = batch.run(model, batch.expand([str(tmp_path / "in.jsonl")]), str(out),
                                chunk_size=4)
            assert (summary.predictions, summary.errors, summary.blank) == (120, 30, 5)
            written.append(out.read_bytes())
    assert written[0] == written[1] and written[0].count(b"\n") == 150
