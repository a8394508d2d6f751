"""``flask-predict batch --input gs://... | s3://...``: a job's inputs read from the storage
servers through the same backends as remote model paths; each job's output compared with the
same job on the same files read locally."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pyarrow
import pyarrow.parquet
import pytest

from flask_predict.models.demo import train_iris
from tests.routines import IRIS_ROWS
from tests.storage_servers import S3_ENV, Bucket, s3_server
from tests.unit.batch.test_job import run

COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("batch_inputs") / "iris"
    train_iris(root)
    return root, joblib.load(root / "1" / "model.joblib")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs, as files: JSON lines, CSV and Parquet of the same rows; a hidden file
    and a subfolder that a folder's listing leaves out."""
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "a.jsonl").write_text("".join(json.dumps(row) + "\n" for row in IRIS_ROWS))
    (folder / "b.csv").write_text(",".join(COLUMNS) + "\n" + "".join(
        ",".join(map(str, row)) + "\n" for row in IRIS_ROWS))
    table = pyarrow.table({name: [row[i] for row in IRIS_ROWS]
                           for i, name in enumerate(COLUMNS)})
    pyarrow.parquet.write_table(table, folder / "c.parquet")
    (folder / ".d.jsonl").write_text("not read\n")
    (folder / "sub").mkdir()
    shutil.copy(folder / "a.jsonl", folder / "sub" / "e.jsonl")
    return folder


def test_files_folders_and_globs(bucket: Bucket, iris: tuple[Path, Any], files: Path,
                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Every kind of path and format reads as the same files read locally; the downloads
    leave nothing behind."""
    model, own = iris
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    bucket.upload(files, "batch/in")
    expected = own.predict(np.array(IRIS_ROWS)).tolist()
    cases = [("in", "", 3), ("in/*.csv", "*.csv", 1), ("in/a.jsonl", "a.jsonl", 1),
             ("in/*/e.jsonl", "*/e.jsonl", 1)]
    for remote, local, count in cases:
        out, mine = tmp_path / "remote.jsonl", tmp_path / "local.jsonl"
        status, err = run(capsys, str(model), "--input", bucket.uri(f"batch/{remote}"),
                          "--output", str(out), "--chunk-size", "2")
        assert status == 0, err
        assert f"{3 * count} instances: {3 * count} predictions, 0 errors" in err
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert [line["prediction"] for line in lines] == expected * count
        assert lines[0]["instance"] == IRIS_ROWS[0]
        status, err = run(capsys, str(model), "--input", str(files / local), "--output",
                          str(mine), "--chunk-size", "2")
        assert status == 0, err
        assert out.read_bytes() == mine.read_bytes(), remote
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local.jsonl", "remote.jsonl",
                                                          "tmp"]
    assert not list((tmp_path / "tmp").iterdir())


def test_missing_objects_and_buckets_are_one_line(bucket: Bucket, iris: tuple[Path, Any],
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bucket.put("batch/in/a.jsonl", b"[1, 2, 3, 4]\n")
    scheme = bucket.scheme
    cases = [(bucket.uri("batch/in/absent.jsonl"), "no input file there"),
             (bucket.uri("batch/in/*.csv"), "no input file there"),
             (f"{scheme}://absent-{bucket.name}/in.jsonl", "not found"),
             (f"{scheme}://", f"is not {scheme}://BUCKET/PATH")]
    for path, message in cases:
        status, err = run(capsys, str(iris[0]), "--input", path, "--output",
                          str(tmp_path / "out.jsonl"))
        assert status == 1 and message in err, err
        assert err.startswith("flask-predict batch: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out.jsonl").exists()


def test_denied_read_names_the_path_never_the_secret(
        iris: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    server = s3_server(tmp_path / "s3", check_credentials=True).start()
    try:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        status, err = run(capsys, str(iris[0]), "--input", "s3://private-inputs/in.jsonl",
                          "--output", str(tmp_path / "out.jsonl"))
    finally:
        server.stop()
    assert status == 1 and err.count("\n") == 1, err
    assert err.startswith("flask-predict batch: s3://private-inputs/in.jsonl: cannot list: "
                          "access denied"), err
    assert S3_ENV["AWS_SECRET_ACCESS_KEY"] not in err and S3_ENV["AWS_ACCESS_KEY_ID"] not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_file_list_of_objects(bucket: Bucket, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """A local file list naming objects in the store: each object's bytes one instance; an
    object that is not there is an error line naming it, and the job goes on."""
    from tests.unit.batch.test_instances import BYTES_ROUTINE, RECORDS, expected

    model = tmp_path / "sizes"
    model.mkdir()
    (model / "predictor.py").write_text(BYTES_ROUTINE)
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for n, record in enumerate(RECORDS[:2]):
        (blobs / f"b{n}.bin").write_bytes(record)
    bucket.upload(blobs, "batch/blobs")
    listed = [bucket.uri("batch/blobs/b0.bin"), bucket.uri("batch/blobs/gone.bin"),
              bucket.uri("batch/blobs/b1.bin")]
    (tmp_path / "files.txt").write_text("\n".join(listed) + "\n")
    out = tmp_path / "out.jsonl"
    status, err = run(capsys, str(model), "--input", str(tmp_path / "files.txt"),
                      "--format", "file-list", "--output", str(out))
    assert status == 0, err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [lines[0], lines[2]] == [expected(record) for record in RECORDS[:2]]
    assert lines[1]["instance"] == listed[1]
    assert "cannot be read" in lines[1]["error"]["message"]


def test_outputs_in_the_store(bucket: Bucket, iris: tuple[Path, Any], files: Path,
                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """``--output gs://...`` / ``s3://...``: the object holds what a local output would, and
    appears only once the job is done: a job that stops midway writes none. A folder or a
    missing bucket is one line and status 1."""
    model = str(iris[0])
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    local = tmp_path / "local.jsonl"
    status, err = run(capsys, model, "--input", str(files), "--output", str(local))
    assert status == 0, err
    status, err = run(capsys, model, "--input", str(files), "--output",
                      bucket.uri("out/day-1/predictions.jsonl"))
    assert status == 0, err
    assert bucket.get("out/day-1/predictions.jsonl") == local.read_bytes()
    status, err = run(capsys, model, "--input", str(files), "--output",
                      bucket.uri("out/day-1/pooled.jsonl"), "--processes", "2")
    assert status == 0, err  # the workers' parts kept in a temporary folder, then gone
    assert bucket.get("out/day-1/pooled.jsonl") == local.read_bytes()
    (tmp_path / "broken.parquet").write_text("not parquet\n")
    status, err = run(capsys, model, "--input", str(files / "a.jsonl"), "--input",
                      str(tmp_path / "broken.parquet"), "--output", bucket.uri("out/cut.jsonl"))
    assert status == 1 and "is not a Parquet file" in err, err
    assert bucket.get("out/cut.jsonl") is None
    scheme = bucket.scheme
    for output, message in [(bucket.uri("out/"), "names a folder"),
                            (f"{scheme}://absent-{bucket.name}/p.jsonl", "cannot write")]:
        status, err = run(capsys, model, "--input", str(files / "a.jsonl"), "--output", output)
        assert status == 1 and message in err and err.count("\n") == 1, err
    assert not list((tmp_path / "tmp").iterdir())


def test_models_in_the_store(bucket: Bucket, iris: tuple[Path, Any], tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    """``Model.load``, ``flask-predict predict``, ``check`` and a batch job take a model
    path in a bucket as a server does: versions mirrored into the machine's cache, or a
    folder of artifacts served as version 1; a path with nothing there is one line."""
    from flask_predict.api import Model
    from flask_predict.cli import main

    model, own = iris
    bucket.upload(model, "models/iris")
    bucket.upload(model / "1", "artifacts/iris")
    expected = own.predict(np.array(IRIS_ROWS)).tolist()
    for remote in ("models/iris", "artifacts/iris"):
        with Model.load(bucket.uri(remote)) as loaded:
            assert loaded.version == 1 and loaded.name == "iris"
            assert loaded.predict_instances(IRIS_ROWS) == expected
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in IRIS_ROWS))
    status, err = run(capsys, bucket.uri("models/iris"), "--input", str(tmp_path / "in.jsonl"),
                      "--output", str(tmp_path / "out.jsonl"))
    assert status == 0, err
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["prediction"] for line in lines] == expected
    (tmp_path / "one.jsonl").write_text(json.dumps(IRIS_ROWS[0]) + "\n")
    assert main(["predict", bucket.uri("models/iris"), "--json-instances",
                 str(tmp_path / "one.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out) == {"predictions": expected[:1]}
    assert main(["check", bucket.uri("models/iris")]) == 0  # what serve would do with it
    assert "iris" in capsys.readouterr().out
    status, err = run(capsys, bucket.uri("models/absent"), "--input",
                      str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "none.jsonl"))
    assert status == 1 and err.count("\n") == 1 and "models/absent" in err, err
