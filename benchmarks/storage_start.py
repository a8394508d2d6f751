"""Start-up from a bucket (issue 42): the time from starting gunicorn (2 workers) to its
readiness for an iris model with a 64 MiB artifact beside it, served from a local folder
(the baseline), from s3:// with an empty cache (one download for the machine, after the
one-second listing that decides the version is complete) and from s3:// with the cache
left by the previous start. moto's S3 server on 127.0.0.1 stands in for the store.

    .venv/bin/python benchmarks/storage_start.py [--rounds 3] [--no-readme]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import harness  # noqa: E402  (the script's own folder is on sys.path)
from tests import models  # noqa: E402
from tests.e2e.server import GunicornServer  # noqa: E402
from tests.storage_servers import Bucket, s3_server  # noqa: E402

ARTIFACT_MIB = 64


def started_in(config: dict[str, object], env: dict[str, str], log: Path) -> tuple[float, int]:
    """Seconds to readiness, and the downloads the server logged."""
    begun = time.perf_counter()
    with GunicornServer(config, workers=2, env=env, log_path=log) as server:
        seconds = time.perf_counter() - begun
        downloads = server.log_text().count("downloaded (")
    return seconds, downloads


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flask-predict-storage-") as tmp:
        work = Path(tmp)
        models.train_iris(work / "local" / "iris")
        (work / "local" / "iris" / "1" / "weights.bin").write_bytes(
            os.urandom(ARTIFACT_MIB << 20))
        store = s3_server(work / "s3").start()
        try:
            os.environ.update(store.env)
            bucket = Bucket(store, "s3", "bench")
            bucket.upload(work / "local", "models")
            local = {"iris": {"base_path": str(work / "local" / "iris")}}
            remote = {"iris": {"base_path": bucket.uri("models/iris")}}
            cache = work / "cache"
            env = {**store.env, "FLASK_PREDICT_STORAGE_CACHE": str(cache)}
            times: dict[str, list[float]] = {"local folder": [], "s3, empty cache": [],
                                             "s3, warm cache": []}
            downloads: dict[str, int] = {name: 0 for name in times}
            for round_ in range(args.rounds):
                for name, config in (("local folder", local), ("s3, empty cache", remote),
                                     ("s3, warm cache", remote)):
                    if name == "s3, empty cache":
                        shutil.rmtree(cache, ignore_errors=True)
                    seconds, fetched = started_in(config, env, work / f"{round_}-{name}.log")
                    times[name].append(seconds)
                    downloads[name] += fetched
        finally:
            store.stop()
    base = statistics.median(times["local folder"])
    rows = [f"| {name} | {statistics.median(values):.2f} s | "
            f"{statistics.median(values) / base:.2f}x | {downloads[name] / args.rounds:g} |"
            for name, values in times.items()]
    report = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d %H:%M')}, {args.rounds} rounds (medians), "
        f"load average {harness.load_average()} at the end:", "",
        "| model path | start to ready | vs local folder | downloads per start |",
        "|---|---|---|---|", *rows])
    print(report)
    if not args.no_readme:
        harness.update_readme("storage-start", report)


if __name__ == "__main__":
    main()
