"""A batch job's overhead: ``flask-predict batch`` on a JSON lines file against the
predictor called directly on the same chunks, for ``lr`` and ``xgb`` (``models.py``), with
1 and 2 processes; its peak memory as the file grows; Spark's ``mapInPandas`` helper
against plain pandas on the same frame, whole and in Spark's batches.

    .venv/bin/python benchmarks/batch_job.py [--rows 1000000] [--repeats 3]
        [--before REV] [--no-spark | --spark-only]

The baseline runs in a fresh process: the file's lines parsed (outside the timing) into
chunks of instances, then ``Model.predict_instances`` on each chunk, which is the predictor's own
``predict`` behind the service's one door. A second row times ``Model.predict_matrix`` on
the same chunks already as float64 matrices (the door the job takes for rows of numbers):
the model's own share, for reading what the job spends around it. The job runs as users run
it, a subprocess, its time from start to exit (the model's load included) and its peak
resident memory (the largest of its processes). Figures are ratios against the baseline of
the same run, each time the best of ``--repeats`` runs (the least disturbed by other work on
the machine); each repeat times the baseline and then every job (in the other order every
other repeat), so that a change in the machine's load reaches both.

``--before REV``: the job also runs with the ``flask_predict`` package of git revision REV
(exported to a temporary folder, first on ``PYTHONPATH``), in the same run, for a before and
after reading.
"""

from __future__ import annotations

import argparse
import re
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

CHUNK = 1000


def write_lines(path: Path, count: int) -> None:
    """*count* rows of ``models.rows``, one JSON list per line, written a block at a time."""
    values = models.rows(count)
    with open(path, "wb") as out:
        for start in range(0, count, 100_000):
            out.write(b"".join(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
                               for row in values[start:start + 100_000]))


def direct(model_dir: Path, path: Path) -> tuple[float, float]:
    """Seconds of one pass of ``predict_instances`` on every chunk of *path*, parsed
    beforehand, and of ``predict_matrix`` on the same chunks as float64 matrices (the door
    the job takes for rows of numbers), in a fresh process, as the job runs: a process that
    trained models keeps native thread pools that would slow XGBoost's calls here."""
    done = subprocess.run([sys.executable, "-c", DIRECT, str(model_dir), str(path),
                           str(CHUNK)], check=True, capture_output=True, text=True)
    instances, matrix = done.stdout.split()
    return float(instances), float(matrix)


DIRECT = """
import sys, time
import numpy as np, orjson
from flask_predict.api import Model
model_dir, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "rb") as file:
    lines = [orjson.loads(line) for line in file]
chunks = [lines[i:i + size] for i in range(0, len(lines), size)]
matrices = [np.array(chunk, dtype=np.float64) for chunk in chunks]
with Model.load(model_dir) as model:
    started = time.perf_counter()
    for chunk in chunks:
        model.predict_instances(chunk)
    instances = time.perf_counter() - started
    started = time.perf_counter()
    for matrix in matrices:
        model.predict_matrix(matrix)
    print(instances, time.perf_counter() - started)
"""


def job(model_dir: Path, path: Path, processes: int,
        package: Path | None = None) -> tuple[float, float, int]:
    """Seconds scoring (the job's summary: reading, predicting, writing; not the start-up
    and the model's load), seconds in all, and peak resident MiB of ``flask-predict batch``
    on *path* (with the ``flask_predict`` found in *package*, when given)."""
    output = path.with_suffix(".out.jsonl")
    output.unlink(missing_ok=True)  # a new output, as a first run writes (replacing the last
    # run's would add the freeing of its blocks, 0.1 s for 420 MB, to the job's own time)
    command = [str(Path(sys.executable).with_name("flask-predict")), "batch", str(model_dir),
               "--input", str(path), "--output", str(output),
               "--processes", str(processes), "--chunk-size", str(CHUNK)]
    env = dict(os.environ, PYTHONPATH=str(package)) if package else None
    started = time.perf_counter()
    # a fresh child per run: ru_maxrss of RUSAGE_CHILDREN is the largest process waited for
    done = subprocess.run([sys.executable, "-c", PEAK, *command], check=True,
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    scoring = re.search(r" in ([0-9.]+)s ", done.stderr)
    assert scoring is not None, done.stderr
    return float(scoring.group(1)), wall, int(done.stdout) // 1024


def export_package(revision: str, into: Path) -> Path:
    """``flask_predict`` as it was at git *revision*, under *into*."""
    into.mkdir()
    archive = subprocess.run(["git", "archive", revision, "flask_predict"], cwd=HERE.parent,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


SPARK_BATCH = 10_000
"""Rows per Arrow batch Spark hands a Python worker (``spark.sql.execution.arrow.
maxRecordsPerBatch``, its default)."""


def spark_rates(model_dir: Path, count: int) -> dict[str, float]:
    """Rows per second of Spark's helper (local[2], two partitions, Spark's ``noop`` sink)
    on a cached frame of *count* rows: its first run (each Python worker started, importing
    flask-predict and loading the model) and its second (the workers reused, the model
    loaded); against plain pandas in this process: ``Model.predict`` on the whole frame,
    and the helper's own per-batch function on the same frame in Spark's batches."""
    import pandas as pd
    from pyspark.sql import SparkSession

    from flask_predict.api import Model
    from flask_predict.engines import partitions
    from flask_predict.engines import spark as on_spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    frame = pd.DataFrame(models.rows(count))
    frame.columns = [f"f{i}" for i in frame.columns]
    rates: dict[str, float] = {}
    with Model.load(model_dir) as model:
        started = time.perf_counter()
        model.predict(frame.to_numpy(), ["predict"])
        rates["pandas, one call"] = count / (time.perf_counter() - started)
    ref = partitions.ModelRef.of(str(model_dir), ["predict"])
    batches = [frame.iloc[start:start + SPARK_BATCH] for start in range(0, count, SPARK_BATCH)]
    partitions.score(ref, batches[0])  # the model loaded, as in a reused Spark worker
    started = time.perf_counter()
    for batch in batches:
        partitions.score(ref, batch)
    rates["pandas, Spark's batches"] = count / (time.perf_counter() - started)
    session = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        data = session.createDataFrame(frame).repartition(2).cache()
        data.count()
        for run in ("Spark, first run", "Spark, second run"):
            started = time.perf_counter()
            scored = on_spark.predict(data, str(model_dir), ["predict"])
            scored.write.format("noop").mode("overwrite").save()
            rates[run] = count / (time.perf_counter() - started)
    finally:
        session.stop()
    return rates


def print_spark(rates: dict[str, float]) -> None:
    baseline = rates["pandas, Spark's batches"]
    print(f"\n| `lr`, {SPARK_BATCH:,} rows a batch | rows/s | against pandas in Spark's batches |")
    print("| --- | --- | --- |")
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} | {rate / baseline:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--spark-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = models.train(Path(tmp) / "models")
        if args.spark_only:
            print_spark(spark_rates(root / "lr", args.rows))
            return
        small, large = Path(tmp) / "quarter.jsonl", Path(tmp) / "rows.jsonl"
        write_lines(small, args.rows // 4)
        write_lines(large, args.rows)
        codes: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.before:
            codes.insert(0, (args.before, export_package(args.before, Path(tmp) / "before")))
        print(f"| model | code | processes | rows/s | scoring time / direct's | wall time, "
              f"start-up included | peak MiB, {args.rows // 4:,} rows | peak MiB, "
              f"{args.rows:,} rows |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for name in ("lr", "xgb"):
            configs = [(code, package, processes) for code, package in codes
                       for processes in (1, 2)]
            small_peaks = [job(root / name, small, processes, package)[2]
                           for _, package, processes in configs]
            directs: list[tuple[float, float]] = []
            jobs: list[list[tuple[float, float, int]]] = [[] for _ in configs]
            for repeat in range(args.repeats):  # each repeat: the baseline, then every job
                directs.append(direct(root / name, large))
                order = list(zip(jobs, configs))
                if repeat % 2:  # every other repeat the other way round: no job always
                    order.reverse()  # follows the same one (and its 420 MB just written)
                for runs, (_, package, processes) in order:
                    runs.append(job(root / name, large, processes, package))
            baseline = min(seconds for seconds, _ in directs)
            matrix_door = min(seconds for _, seconds in directs)
            print(f"| {name} | direct | | {args.rows / baseline:,.0f} | 1.00 | | | |")
            print(f"| {name} | direct, matrix door | | {args.rows / matrix_door:,.0f} | "
                  f"{matrix_door / baseline:.2f} | | | |")
            for (code, _, processes), runs, small_peak in zip(configs, jobs, small_peaks):
                seconds = min(run[0] for run in runs)
                wall = min(run[1] for run in runs)
                peak = max(run[2] for run in runs)
                print(f"| {name} | {code} | {processes} | {args.rows / seconds:,.0f} | "
                      f"{seconds / baseline:.2f} | {wall:.1f}s | {small_peak} | {peak} |",
                      flush=True)
        if not args.no_spark:
            print_spark(spark_rates(root / "lr", args.rows))


if __name__ == "__main__":
    main()
