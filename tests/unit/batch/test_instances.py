"""Vertex AI's instance config in batch jobs: a key field, included and excluded fields and
the instance type, on JSON lines, CSV and Parquet, with real models trained here."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict.batch.instances import InstanceConfig
from flask_predict.errors import InvalidInput
from tests.routines import IRIS_ROWS
from tests.tabular_models import PEOPLE_ROWS, frame
from tests.unit.batch.test_job import models, read_lines, run

__all__ = ["models"]  # the module fixture, shared

IRIS_NAMES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def test_config_shapes_records() -> None:
    record = {"id": "r1", "b": 2, "a": 1, "note": "x"}
    keyed = InstanceConfig(key_field="id")
    assert keyed.label(record) == ("key", "r1")
    assert keyed.instance(record) == {"b": 2, "a": 1, "note": "x"}
    assert keyed.instance(record, table=True) == [2, 1, "x"]  # a row: an array by default
    picked = InstanceConfig(instance_type="array", included_fields=("a", "b"))
    assert picked.label(record) == ("instance", record)
    assert picked.instance(record) == [1, 2]
    assert InstanceConfig(excluded_fields=("note",)).instance(record) == {
        "id": "r1", "b": 2, "a": 1}
    assert InstanceConfig(instance_type="object").instance(record) == record
    assert InstanceConfig().instance([1, 2]) == [1, 2]
    assert InstanceConfig(instance_type="array").instance([1, 2]) == [1, 2]
    assert not InstanceConfig().shapes_records


@pytest.mark.parametrize("config, record, message", [
    (InstanceConfig(key_field="id"), [1, 2], "must be a JSON object to read its key field "
                                             "'id', not an array"),
    (InstanceConfig(key_field="id"), {"a": 1}, "the record has no key field 'id'"),
    (InstanceConfig(included_fields=("a", "z")), {"a": 1}, "no field 'z' (an included"),
    (InstanceConfig(instance_type="object"), "text", "to be sent as an object, not a string"),
    (InstanceConfig(instance_type="array"), {"a": 1}, "only with --included-fields"),
])
def test_records_it_cannot_shape(config: InstanceConfig, record: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=None) as raised:
        config.instance(record)
    assert message in raised.value.message


@pytest.mark.parametrize("fields, message", [
    ({"included_fields": ("a",), "excluded_fields": ("b",)}, "cannot both be given"),
    ({"key_field": "a", "included_fields": ("a",)}, "cannot also be an included field"),
    ({"instance_type": "table"}, "must be 'array' or 'object'"),
])
def test_contradictions_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        InstanceConfig(**fields)


def test_key_and_included_fields_on_json_lines(models: tuple[Path, Any, Any], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Object lines with a key, their features picked in order into an array: each output
    line carries the key, never the instance; a line without its key or a field, or not
    an object, gets its error and the job goes on."""
    root, iris, _ = models
    records = [{"id": f"flower-{n}", "note": "kept out", **dict(zip(IRIS_NAMES, row))}
               for n, row in enumerate(IRIS_ROWS)]
    lines = [json.dumps(record) for record in records]
    lines.insert(1, json.dumps({"sepal_length": 1.0}))  # no key
    lines.append(json.dumps(IRIS_ROWS[0]))  # an array: no field to read
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    for processes in ("1", "2"):
        out = tmp_path / f"out{processes}.jsonl"
        status, err = run(capsys, str(root / "iris"), "--input", str(tmp_path / "in.jsonl"),
                          "--output", str(out), "--key-field", "id", "--instance-type",
                          "array", "--included-fields", ",".join(IRIS_NAMES),
                          "--processes", processes, "--chunk-size", "2")
        assert status == 0, err
        written = read_lines(out)
        own = iris.predict(np.array(IRIS_ROWS)).tolist()
        assert [line.get("key") for line in written] == [
            "flower-0", None, "flower-1", "flower-2", None]
        assert [line.get("prediction") for line in written] == [own[0], None, own[1],
                                                                own[2], None]
        assert "instance" not in written[0]
        assert written[1]["error"]["message"] == "the record has no key field 'id'"
        assert written[1]["instance"] == {"sepal_length": 1.0}
        assert "not an array" in written[4]["error"]["message"]
    assert (tmp_path / "out1.jsonl").read_bytes() == (tmp_path / "out2.jsonl").read_bytes()


def test_key_and_excluded_fields_on_tables(models: tuple[Path, Any, Any], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV and a Parquet table with an id and a column the model never saw: the key
    names each line, the excluded column stays out of the instance (arrays by default,
    objects on request); without a key, the line's instance is the row as read."""
    root, _, people = models
    rows = frame(PEOPLE_ROWS)
    own = people.predict(rows).tolist()
    table = rows.assign(customer=[f"c{n}" for n in range(len(rows))], batch="2026-11")
    table = table[["customer", *rows.columns, "batch"]]
    table.to_csv(tmp_path / "rows.csv", index=False)
    table.to_parquet(tmp_path / "rows.parquet")
    for source in ("rows.csv", "rows.parquet"):
        for kind in ("array", "object"):
            out = tmp_path / f"{source}-{kind}.jsonl"
            status, err = run(capsys, str(root / "people"), "--input",
                              str(tmp_path / source), "--output", str(out), "--key-field",
                              "customer", "--excluded-fields", "batch", "--instance-type",
                              kind)
            assert status == 0, err
            written = read_lines(out)
            assert [line["key"] for line in written] == list(table.customer)
            assert [line["prediction"] for line in written] == own
    out = tmp_path / "no-key.jsonl"
    status, err = run(capsys, str(root / "people"), "--input", str(tmp_path / "rows.csv"),
                      "--output", str(out), "--excluded-fields", "customer,batch")
    assert status == 0, err
    written = read_lines(out)
    assert [line["prediction"] for line in written] == own
    assert written[0]["instance"]["customer"] == "c0"  # excluded fields stay in the output


def test_flags_that_contradict(models: tuple[Path, Any, Any], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.jsonl").write_text("[1]\n")
    for flags, message in [(["--included-fields", "a", "--excluded-fields", "b"],
                            "cannot both be given"),
                           (["--included-fields", "a,,b"], "an empty field name")]:
        status, err = run(capsys, str(models[0] / "iris"), "--input",
                          str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "o.jsonl"),
                          *flags)
        assert status == 2 and message in err, err
    assert not (tmp_path / "o.jsonl").exists()


BYTES_ROUTINE = """
import base64

class Sizes:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, **kwargs):
        return [[len(base64.b64decode(i["b64"])), base64.b64decode(i["b64"])[:1].hex()]
                for i in instances]
"""
RECORDS = [b"alpha", b"\x00\xff binary \x80", b"", b"x" * 70_000]


@pytest.fixture(scope="module")
def sizes_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sizes")
    (folder / "predictor.py").write_text(BYTES_ROUTINE)
    return folder


def expected(record: bytes) -> dict[str, Any]:
    return {"instance": {"b64": base64.b64encode(record).decode()},
            "prediction": [len(record), record[:1].hex()]}


def test_tfrecord_files(sizes_model: Path, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    """TFRecord files that TensorFlow wrote, plain and gzipped: one ``{"b64": ...}``
    instance per record; a file cut short answers its last record with an error."""
    tf = pytest.importorskip("tensorflow")
    for name, options in (("plain.tfrecord", None), ("packed.tfrecord.gz", "GZIP")):
        with tf.io.TFRecordWriter(str(tmp_path / name), options=options) as writer:
            for record in RECORDS:
                writer.write(record)
    (tmp_path / "cut.tfrecord").write_bytes((tmp_path / "plain.tfrecord").read_bytes()[:-9])
    for name, format in (("plain.tfrecord", []), ("packed.tfrecord.gz", []),
                         ("plain.tfrecord", ["--format", "tf-record"])):
        out = tmp_path / "out.jsonl"
        status, err = run(capsys, str(sizes_model), "--input", str(tmp_path / name),
                          "--output", str(out), "--chunk-size", "3", *format)
        assert status == 0, err
        assert read_lines(out) == [expected(record) for record in RECORDS]
    status, err = run(capsys, str(sizes_model), "--input", str(tmp_path / "cut.tfrecord"),
                      "--output", str(out))
    assert status == 0, err
    written = read_lines(out)
    assert written[:3] == [expected(record) for record in RECORDS[:3]]
    assert written[3]["instance"] == "record 4"
    assert written[3]["error"]["message"] == "the file ends inside a record"
    (tmp_path / "text.tfrecord").write_text('{"not": "a record file"}\n')
    run(capsys, str(sizes_model), "--input", str(tmp_path / "text.tfrecord"), "--output",
        str(out))
    assert "fails its checksum" in read_lines(out)[0]["error"]["message"]


def test_file_lists(sizes_model: Path, tmp_path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:
    """A file list: each listed file's bytes one instance; a file that cannot be read is
    an error line naming it; fields cannot be named for such records."""
    paths = []
    for n, record in enumerate(RECORDS[:2]):
        paths.append(tmp_path / f"blob{n}.bin")
        paths[-1].write_bytes(record)
    missing = tmp_path / "gone.bin"
    (tmp_path / "files.txt").write_text(f"{paths[0]}\n\n{missing}\n{paths[1]}\n")
    out = tmp_path / "out.jsonl"
    status, err = run(capsys, str(sizes_model), "--input", str(tmp_path / "files.txt"),
                      "--format", "file-list", "--output", str(out))
    assert status == 0, err
    written = read_lines(out)
    assert [written[0], written[2]] == [expected(record) for record in RECORDS[:2]]
    assert written[1]["instance"] == str(missing)
    assert "cannot be read: No such file or directory" in written[1]["error"]["message"]
    status, err = run(capsys, str(sizes_model), "--input", str(tmp_path / "files.txt"),
                      "--format", "file-list", "--output", str(out), "--key-field", "id")
    assert status == 1 and "not TFRecord files or file lists" in err


def test_progress_counts_each_byte_once(tmp_path: Path) -> None:
    """The input bytes a job reports read add up to the file's size, whatever the chunks."""
    from flask_predict.batch import reading, sources

    rows = frame(PEOPLE_ROWS * 300)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    source = sources.expand([str(tmp_path / "rows.csv")])[0]
    for size in (7, 1000, 10_000):
        read = [chunk.read_bytes for chunk in reading.chunks(source, size)]
        assert sum(read) == (tmp_path / "rows.csv").stat().st_size, size


def test_serialized_examples_into_a_saved_model(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The usual TFRecord job: serialized ``tf.train.Example`` records fed to a SavedModel
    whose serving signature parses them (a string input), as Vertex AI sends them: each
    record ``{"b64": ...}``, decoded to the string tensor. The predictions are the model's
    own on the same records."""
    tf = pytest.importorskip("tensorflow")

    class Parser(tf.Module):  # type: ignore[misc]
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples: Any) -> Any:
            features = tf.io.parse_example(
                examples, {"x": tf.io.FixedLenFeature([2], tf.float32)})
            return {"total": tf.reduce_sum(features["x"], axis=1)}

    module = Parser()
    tf.saved_model.save(module, str(tmp_path / "parser" / "1"),
                        signatures={"serving_default": module.serve})
    rows = [[1.5, 2.0], [-3.25, 0.5], [1e-3, 7.0]]
    records = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        .SerializeToString() for row in rows]
    with tf.io.TFRecordWriter(str(tmp_path / "rows.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    out = tmp_path / "out.jsonl"
    status, err = run(capsys, str(tmp_path / "parser"), "--input",
                      str(tmp_path / "rows.tfrecord"), "--output", str(out))
    assert status == 0, err
    own = module.serve(tf.constant(records))["total"].numpy().tolist()
    written = read_lines(out)
    assert [line["prediction"] for line in written] == pytest.approx(own, rel=1e-6)
    assert [line["instance"]["b64"] for line in written] == [
        base64.b64encode(record).decode() for record in records]


def test_explanations_beside_the_predictions(models: tuple[Path, Any, Any], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``--explain`` (Vertex AI's ``generateExplanation``): each line's prediction with its
    explanation, what the Python API's ``explain_instances`` (the explain route's answer)
    gives for the same instances; a bad line gets its error alone; with a key field too."""
    from flask_predict.api import Model

    root = models[0]
    records = [{"id": n, **row} for n, row in enumerate(PEOPLE_ROWS)]
    lines = [json.dumps(record) for record in records]
    lines.insert(1, json.dumps({"id": 99, "age": "old"}))
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    with Model.load(root / "people") as model:
        predictions, explanations = model.explain_instances(
            [{k: v for k, v in record.items() if k != "id"} for record in records])
    for processes in ("1", "2"):
        out = tmp_path / f"out{processes}.jsonl"
        status, err = run(capsys, str(root / "people"), "--input", str(tmp_path / "in.jsonl"),
                          "--output", str(out), "--explain", "--key-field", "id",
                          "--processes", processes, "--chunk-size", "2")
        assert status == 0, err
        written = read_lines(out)
        good = [written[0], *written[2:]]
        assert [line["key"] for line in good] == [record["id"] for record in records]
        assert [line["prediction"] for line in good] == predictions
        assert close([line["explanation"] for line in good], explanations)
        assert written[1]["key"] == 99 and written[1]["error"]["code"] == 400
    assert close(read_lines(tmp_path / "out2.jsonl"), read_lines(tmp_path / "out1.jsonl"))


def close(got: Any, want: Any) -> bool:
    """*got* equals *want*, floats to 9 significant digits (a chunk of another size may sum
    a row's attributions in another order: the last bits move, and an exact attribution's
    gap reads 0 or 2e-16)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(
            close(got[key], want[key]) for key in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            close(a, b) for a, b in zip(got, want))
    if isinstance(want, float):
        return got == pytest.approx(want, rel=1e-9, abs=1e-12)
    return bool(got == want)


def test_explain_with_a_model_that_cannot(sizes_model: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A model that does not explain stops the job at once, one line, no output."""
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"b64": base64.b64encode(r).decode()}) + "\n" for r in RECORDS * 50))
    for processes in ("1", "2"):
        status, err = run(capsys, str(sizes_model), "--input", str(tmp_path / "in.jsonl"),
                          "--output", str(tmp_path / "out.jsonl"), "--explain",
                          "--processes", processes)
        assert status == 1 and err.count("\n") == 1, err
        assert "--explain: " in err and "cannot explain its predictions" in err, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
