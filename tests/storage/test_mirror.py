"""The cache of remote model paths against real stores (moto's S3 server, a Cloud Storage
emulator) through the real clients: versions and flat prefixes, uploads in progress, corrupt
objects, removed versions, outages and credentials."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from flask_predict import storage
from flask_predict.storage.artifacts import version_folders
from flask_predict.storage.cache import SETTLE_SECONDS
from tests.storage.conftest import new_bucket
from tests.storage_servers import S3_ENV, Bucket, StoreServer, gcs_server, s3_server


def downloads(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "downloaded" in r.getMessage()]


def test_versioned_prefix(bucket: Bucket, caplog: pytest.LogCaptureFixture) -> None:
    bucket.put("iris/1/config.json", b'{"scale": 1}')
    bucket.put("iris/00000002/config.json", b'{"scale": 2}')
    bucket.put("iris/00000002/variables/data", b"\x00" * 3000)
    bucket.put("iris/notes.txt", b"not a version")
    with caplog.at_level(logging.INFO, "flask_predict"):
        base = storage.resolve(bucket.uri("iris"))
    assert sorted(version_folders(base)) == [1, 2]
    assert Path(base, "2", "config.json").read_bytes() == b'{"scale": 2}'
    assert Path(base, "2", "variables", "data").stat().st_size == 3000
    assert len(downloads(caplog)) == 2
    # resolved again (another process, a re-read config file): nothing is fetched again
    caplog.clear()
    with caplog.at_level(logging.INFO, "flask_predict"):
        assert storage.resolve(bucket.uri("iris/")) == base
        storage.refresh(base, poll_seconds=0)
    assert downloads(caplog) == []


def test_flat_prefix_is_version_1(bucket: Bucket) -> None:
    bucket.put("vertex/model/saved_model.pb", b"graph")
    bucket.put("vertex/model/variables/variables.index", b"index")
    base = storage.resolve(bucket.uri("vertex/model"))
    assert list(version_folders(base)) == [1]
    assert sorted(os.listdir(Path(base, "1"))) == ["saved_model.pb", "variables"]


def test_partial_upload_waits_until_the_listing_settles(bucket: Bucket) -> None:
    bucket.put("m/1/config.json", b"{}")
    base = storage.resolve(bucket.uri("m"))
    bucket.put("m/2/saved_model.pb", b"first object")
    storage.refresh(base, poll_seconds=0)
    assert sorted(version_folders(base)) == [1]   # seen once: not complete yet
    time.sleep(SETTLE_SECONDS / 2)
    bucket.put("m/2/variables/data", b"second object")
    storage.refresh(base, poll_seconds=0)
    assert sorted(version_folders(base)) == [1]   # changed since: still not complete
    time.sleep(SETTLE_SECONDS)
    storage.refresh(base, poll_seconds=0)
    assert sorted(version_folders(base)) == [1, 2]
    assert sorted(os.listdir(Path(base, "2"))) == ["saved_model.pb", "variables"]


def test_a_version_that_changes_is_swapped_whole(bucket: Bucket) -> None:
    bucket.put("m/1/config.json", b'{"scale": 1}')
    base = storage.resolve(bucket.uri("m"))
    first = os.path.realpath(Path(base, "1"))
    bucket.put("m/1/config.json", b'{"scale": 3}')
    storage.refresh(base, poll_seconds=0)
    time.sleep(SETTLE_SECONDS)
    storage.refresh(base, poll_seconds=0)
    assert Path(base, "1", "config.json").read_bytes() == b'{"scale": 3}'
    assert not os.path.exists(first)


def test_removed_version_leaves_the_cache(bucket: Bucket) -> None:
    bucket.put("m/1/a", b"1")
    bucket.put("m/2/a", b"2")
    base = storage.resolve(bucket.uri("m"))
    assert sorted(version_folders(base)) == [1, 2]
    bucket.delete("m/1/a")
    storage.refresh(base, poll_seconds=0)
    assert sorted(version_folders(base)) == [2]
    assert len(os.listdir(Path(base, ".objects"))) == 1


def test_missing_bucket_at_start_is_one_line(bucket: Bucket) -> None:
    with pytest.raises(storage.StorageError) as raised:
        storage.resolve(f"{bucket.scheme}://no-such-bucket-here/models/m")
    message = str(raised.value)
    assert message.startswith(f"{bucket.scheme}://no-such-bucket-here/models/m: cannot list")
    assert "not found" in message and "\n" not in message


def test_empty_prefix_at_start_is_one_line(bucket: Bucket) -> None:
    bucket.put("other/1/a", b"1")
    with pytest.raises(storage.StorageError, match=r"/empty: no model under this prefix"):
        storage.resolve(bucket.uri("empty"))


def test_malformed_uris_are_config_errors() -> None:
    for path in ("gs://", "s3://bucket/../etc", "azure://container/models"):
        with pytest.raises(storage.StorageError.__mro__[1]):
            storage.resolve(path)


def corrupt(server: StoreServer, bucket: Bucket, key: str) -> None:
    """Change an object's bytes where the emulator keeps them, behind its back: the
    checksum it lists stays the original's."""
    found = [p for p in server.cwd.rglob("*") if p.is_file() and p.as_posix().endswith(
        f"{bucket.name}/{key}")]
    assert found, "the emulator keeps objects elsewhere"
    data = bytearray(found[0].read_bytes())
    data[0] ^= 0xFF
    found[0].write_bytes(bytes(data))


def test_corrupt_object_is_never_cached(gcs: StoreServer, monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    bucket = new_bucket(gcs, "gs", monkeypatch, tmp_path)
    bucket.put("m/1/model.bin", b"good bytes")
    corrupt(gcs, bucket, "m/1/model.bin")
    with pytest.raises(storage.StorageError, match="MD5 checksum"):
        storage.resolve(bucket.uri("m"))        # at start: the server stops, one line
    bucket.put("m/1/model.bin", b"good bytes")  # fixed: the next start serves it
    base = storage.resolve(bucket.uri("m"))
    bucket.put("m/2/model.bin", b"new bytes")
    corrupt(gcs, bucket, "m/2/model.bin")
    storage.refresh(base, poll_seconds=0)
    time.sleep(SETTLE_SECONDS)
    with caplog.at_level(logging.WARNING, "flask_predict"):
        storage.refresh(base, poll_seconds=0)   # while serving: logged, retried later
    assert sorted(version_folders(base)) == [1]
    assert [r.getMessage() for r in caplog.records if "MD5" in r.getMessage()]
    assert not [p for p in Path(base, ".objects").iterdir() if p.name.startswith(".partial")]


def test_outage_keeps_the_cache_and_logs_with_backoff(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    server = s3_server(tmp_path / "s3").start()
    try:
        bucket = new_bucket(server, "s3", monkeypatch, tmp_path)
        bucket.put("m/1/a", b"1")
        base = storage.resolve(bucket.uri("m"))
    finally:
        server.stop()
    time.sleep(1.1)  # half a poll after the first sync's listing: the next poll lists
    with caplog.at_level(logging.INFO, "flask_predict"):
        for _ in range(5):  # five polls in a row: the first fails, the rest wait
            storage.refresh(base, poll_seconds=2)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"flask_predict: {bucket.uri('m')}: cannot list: the store "
                                  "is unreachable")
    assert "next try in 2s" in warnings[0]
    assert sorted(version_folders(base)) == [1]
    state = json.loads(Path(base, ".state.json").read_text())
    assert state["failures"] == 1


def test_bad_credentials_name_the_uri_never_the_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    server = s3_server(tmp_path / "s3", check_credentials=True).start()
    try:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("FLASK_PREDICT_STORAGE_CACHE", str(tmp_path / "cache"))
        # every logger at INFO, the server's default (botocore's DEBUG lines show the
        # request's signed headers, as its documentation warns), flask_predict's at DEBUG
        with caplog.at_level(logging.INFO), caplog.at_level(logging.DEBUG, "flask_predict"), \
                pytest.raises(storage.StorageError) as raised:
            storage.resolve("s3://private-models/m")
    finally:
        server.stop()
    message = str(raised.value)
    assert message.startswith("s3://private-models/m: cannot list: access denied")
    logged = "\n".join([message, *(r.getMessage() for r in caplog.records)])
    assert S3_ENV["AWS_SECRET_ACCESS_KEY"] not in logged
    assert S3_ENV["AWS_ACCESS_KEY_ID"] not in logged
