"""Batch prediction jobs (``flask-predict batch``): real models trained here, real files,
the command run as users run it; answers compared with the models' own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import orjson
import pytest

from flask_predict import batch
from flask_predict.api import Model
from flask_predict.cli import main
from flask_predict.models.demo import train_iris
from flask_predict.errors import ConfigError, PredictError
from tests.routines import IRIS_ROWS
from tests.tabular_models import PEOPLE_ROWS, frame, train_people


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    root = tmp_path_factory.mktemp("batch_models")
    train_iris(root / "iris")
    people = train_people(root / "people")
    return root, joblib.load(root / "iris" / "1" / "model.joblib"), people


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        status = main(["batch", *argv])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    return status, capsys.readouterr().err


def read_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bad_blank_and_truncated_lines(models: tuple[Path, Any, Any], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """One output line per instance, in order; a bad line gets its error and never stops
    the job or costs another line its prediction; blank lines are skipped."""
    root, iris, _ = models
    good = [json.dumps(row) for row in IRIS_ROWS]
    text = "\n".join([good[0], "", good[1], "{not json", "[1, 2]", "   ", good[2],
                      good[0][:-3]])  # the last line cut short, no newline
    (tmp_path / "in.jsonl").write_text(text)
    for processes in ("1", "2"):
        out = tmp_path / f"out{processes}.jsonl"
        status, err = run(capsys, str(root / "iris"), "--input", str(tmp_path / "in.jsonl"),
                          "--output", str(out), "--chunk-size", "2", "--processes",
                          processes)
        assert status == 0, err
        assert "6 instances: 3 predictions, 3 errors, 2 blank lines skipped" in err
        lines = read_lines(out)
        own = iris.predict(np.array(IRIS_ROWS)).tolist()
        assert [line.get("prediction") for line in lines] == [own[0], own[1], None, None,
                                                              own[2], None]
        assert [line["instance"] for line in lines[:2]] == IRIS_ROWS[:2]
        assert lines[2]["instance"] == "{not json" and lines[5]["instance"] == good[0][:-3]
        assert lines[2]["error"]["code"] == 400 and "not JSON" in lines[2]["error"]["message"]
        assert lines[3]["error"] == {"code": 400, "status": "INVALID_ARGUMENT",
                                     "message": "input 'inputs': expected shape [-1, 4], "
                                                "got [1, 2]"}
    assert (tmp_path / "out1.jsonl").read_bytes() == (tmp_path / "out2.jsonl").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out1.jsonl", "out2.jsonl"]


def test_csv_and_parquet_tables(models: tuple[Path, Any, Any], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """A table's rows, by position (Vertex AI's default) or by column name, from CSV and
    Parquet files in a folder; a CSV row of the wrong width is an error line."""
    root, _, people = models
    rows = frame(PEOPLE_ROWS)
    own = people.predict(rows).tolist()
    folder = tmp_path / "inputs"
    folder.mkdir()
    rows.to_csv(folder / "a.csv", index=False)
    (folder / "a.csv").write_text((folder / "a.csv").read_text() + "1,2\n")
    rows.to_parquet(folder / "b.parquet")
    for kind in ("array", "object"):
        out = tmp_path / f"{kind}.jsonl"
        status, err = run(capsys, str(root / "people"), "--input", str(folder), "--output",
                          str(out), "--instance-type", kind)
        assert status == 0, err
        lines = read_lines(out)
        assert [line.get("prediction") for line in lines] == own + [None] + own
        assert "2 fields, the header 4" in lines[3]["error"]["message"] and lines[3]["instance"] == "1,2"
        first = PEOPLE_ROWS[0] if kind == "object" else list(PEOPLE_ROWS[0].values())
        assert lines[0]["instance"] == first and lines[4]["instance"] == first


def test_inputs_that_cannot_be_read(models: tuple[Path, Any, Any], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = str(models[0] / "iris")
    (tmp_path / "rows.txt").write_text("[1]\n")
    cases = [([str(tmp_path / "absent*.jsonl")], "no input file there"),
             ([str(tmp_path / "rows.txt")], "unknown input format '.txt'"),
             (["hdfs://cluster/rows.jsonl"], "no reader for hdfs:// paths")]
    for inputs, message in cases:
        status, err = run(capsys, root, "--input", *inputs, "--output",
                          str(tmp_path / "out.jsonl"))
        assert status == 1 and message in err, err
    status, err = run(capsys, root, "--input", str(tmp_path / "rows.txt"), "--format",
                      "jsonl", "--output", str(tmp_path / "out.jsonl"), "--processes", "0")
    assert status == 2 and "at least 1" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_remote_opener_plugs_in(models: tuple[Path, Any, Any], tmp_path: Path) -> None:
    """A scheme's opener registered, its paths are read like local ones."""
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in IRIS_ROWS))

    class Mirror(batch.sources.LocalFiles):
        def expand(self, pattern: str) -> list[str]:
            return [pattern] if pattern == "mem://rows.jsonl" else []

        def open(self, path: str) -> Any:
            return open(tmp_path / path.split("://")[1], "rb")

        def size(self, path: str) -> int | None:
            return None

    batch.register_opener("mem", Mirror())
    with Model.load(models[0] / "iris") as model:
        summary = batch.run(model, batch.expand(["mem://rows.jsonl"]),
                            str(tmp_path / "out.jsonl"))
    assert summary.predictions == 3 and summary.errors == 0
    with pytest.raises(ConfigError, match="no reader for az://"):
        batch.expand(["az://container/rows.jsonl"])


LINES = [b"[5.1,3.5,1.4,0.2]", b"[6,3,5,2]", b"[5.9, 3.0, 4.2, 1.5]\r", b"", b" \t",
         b"  [6.7,3.0,5.2,2.3]", b"[6.7,3.0,5.2,2.3],[5.1", b"3.5,1.4,0.2]", b"[NaN,1,1,1]",
         b"[1,2,3]", b"[[5.1,3.5,1.4,0.2]]", b'["5.1",3.5,1.4,0.2]', b"[5.1,3.5,1.4,0.2]"]
"""Lines of every kind a chunk of plain rows is told from: integers, spaces, a line ending in
``\\r``, blank lines, two rows over two lines (neither line is JSON), NaN, the wrong width,
nesting, text."""


def alone(model: Model, text: bytes) -> dict[str, Any]:
    """The output line of *text* read alone through the instances door, as a server answers
    each instance."""
    echo = text.rstrip(b"\r")
    try:
        instance = json.loads(echo)
    except ValueError:
        return {"instance": echo.decode(), "error": "not JSON"}
    try:
        prediction = model.predict_instances([instance])[0]
    except PredictError as exc:
        return {"instance": instance, "error": exc.message}
    return {"instance": instance, "prediction": prediction, "text": b'{"instance":%b,'
            b'"prediction":%b}' % (echo, orjson.dumps(prediction))}


def test_each_line_answers_as_alone(models: tuple[Path, Any, Any], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the chunks and the blocks read, each line's output is the model's answer to
    it alone: a chunk of plain rows through the matrix door, any other through the
    instances door, a line over two blocks read whole."""
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(LINES * 3))  # no newline at the end
    monkeypatch.setattr(batch.reading, "BLOCK_BYTES", 7)
    with Model.load(models[0] / "iris") as model:
        expected = [alone(model, text) for text in LINES * 3 if text.strip()]
        for size in (1, 2, 1000):
            out = tmp_path / f"out{size}.jsonl"
            summary = batch.run(model, batch.expand([str(tmp_path / "in.jsonl")]), str(out),
                                chunk_size=size)
            assert summary.blank == 6 and summary.rows == len(expected)
            written = out.read_bytes().splitlines()
            for text, line, want in zip(written, read_lines(out), expected):
                assert line["instance"] == want["instance"], text
                if "text" in want:
                    assert text == want["text"]
                else:
                    assert want["error"] in line["error"]["message"], (text, want)
            assert len(written) == len(expected)


SLOW_ROUTINE = """
import time

class Slow:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, **kwargs):
        time.sleep(0.02)
        return [sum(instance) for instance in instances]
"""


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["interrupted", "killed"])
def test_a_job_stopped_then_run_again(tmp_path: Path, how: signal.Signals,
                                      processes: str) -> None:
    """A stopped job leaves nothing under the output's name; run again, it writes it whole
    (a killed pool's parts replaced). A killed pool's workers do not outlive it."""
    model = tmp_path / "slow"
    model.mkdir()
    (model / "predictor.py").write_text(SLOW_ROUTINE)
    rows = [[i, 1] for i in range(400)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    partial, parts = tmp_path / ".out.jsonl.partial", tmp_path / ".out.jsonl.parts"
    argv = [str(Path(sys.executable).with_name("flask-predict")), "batch", str(model), "--input",
            str(tmp_path / "in.jsonl"), "--output", str(out), "--processes", processes,
            "--chunk-size", "1"]
    written = partial if processes == "1" else parts / "000000000"
    # SIGINT as a terminal delivers it, even where this suite runs with it ignored (a
    # background job of a shell without job control, whose children inherit that)
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as job:
        try:
            for _ in range(600):  # until it has written a chunk
                if written.exists() and written.stat().st_size > 0:
                    break
                time.sleep(0.1)
            assert written.stat().st_size > 0 and job.poll() is None
            job.send_signal(how)
            job.wait(timeout=60)
        finally:
            job.kill()
            job.communicate(timeout=60)  # a killed pool's workers end too: stderr closes
    assert job.returncode != 0 and not out.exists()
    assert partial.exists() == (how == signal.SIGKILL)  # an interrupted job cleans up
    assert parts.exists() == (how == signal.SIGKILL and processes == "2")
    again = subprocess.run(argv[:-2], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert [line["prediction"] for line in read_lines(out)] == [i + 1 for i in range(400)]
    assert not partial.exists() and not parts.exists()


@pytest.mark.parametrize("predictions", [
    np.array([0.25, 1e-7, -3.5], dtype=np.float32), [1, 2, 3], np.array([7, 8, 9]),
    [0.5, float("nan"), 1.0], [[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]], ["a", "b", "c"],
    [{"label": 1}, {"label": 2}, {"label": 3}]],
    ids=["float32", "ints", "int64", "nan", "rows", "text", "objects"])
@pytest.mark.parametrize("ending", [b"\n", b""], ids=["lf", "no-newline"])
def test_lines_printed_in_one_pass(predictions: Any, ending: bytes) -> None:
    """A chunk of plain rows and its predictions, printed by filling one format string:
    the very lines of the pairs printed one by one, or ``None`` (then the pairs are) when a
    prediction is not a plain number."""
    from flask_predict.batch import scoring

    rows = [b"[1,2.5,-3]", b"[4e-3,5,6]", b"[7,8,9]"]
    expected = scoring._prediction_lines(rows, predictions)
    lines = scoring._text_prediction_lines(b"\n".join(rows) + ending, 3, predictions)
    plain = isinstance(predictions, np.ndarray) or predictions == [1, 2, 3]
    assert lines == (expected if plain else None)
    assert [json.loads(line) for line in expected.splitlines()][0]["instance"] == [1, 2.5, -3]
    assert scoring._text_prediction_lines(b"\n".join(rows) + ending, 2, predictions) is None
