"""A batch job's output file (``flask_predict.batch.output``): lines written behind by a
thread, lines written in turn and appended parts reach the file in order; a write that
fails (a full disk) fails the job and leaves nothing under the output's name."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from flask_predict.batch import output
from flask_predict.batch.output import OutputFile


def test_lines_written_behind_keep_their_order(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines written behind in batches, lines written in turn and appended parts reach the
    file in the order they were given."""
    monkeypatch.setattr(output, "WRITE_BATCH_PIECES", 3)
    monkeypatch.setattr(output, "WRITEBACK_BYTES", 16)
    pieces = [b"%d\n" % index for index in range(200)]
    with OutputFile(str(tmp_path / "out.jsonl")) as out:
        for index, piece in enumerate(pieces):
            out.write(piece, behind=index % 7 != 0)
            if index == 100:
                part = out.part(0)
                Path(part).write_bytes(b"part\n")
                out.append(part)
        assert not (tmp_path / "out.jsonl").exists()
    expected = b"".join(pieces[:101]) + b"part\n" + b"".join(pieces[101:])
    assert (tmp_path / "out.jsonl").read_bytes() == expected


def test_a_slow_jobs_lines_reach_the_file(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose first lines have waited long enough is written at the next write,
    however small."""
    monkeypatch.setattr(output, "WRITE_BATCH_SECONDS", 0.0)
    with OutputFile(str(tmp_path / "out.jsonl")) as out:
        out.write(b"1\n", behind=True)
        out.write(b"2\n", behind=True)
        out._wait()
        assert (tmp_path / ".out.jsonl.partial").read_bytes() == b"1\n2\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("behind", [True, False], ids=["behind", "in-turn"])
def test_a_write_that_fails_fails_the_job(tmp_path: Path, behind: bool) -> None:
    """A full disk (``/dev/full`` behind the partial file): the error reaches the job,
    written behind or not, and nothing appears under the output's name."""
    (tmp_path / ".out.jsonl.partial").symlink_to("/dev/full")
    with pytest.raises(OSError) as raised:
        with OutputFile(str(tmp_path / "out.jsonl")) as out:
            out.write(b"[1]\n" * 1000, behind=behind)
    assert raised.value.errno == errno.ENOSPC
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / ".out.jsonl.partial").exists()
