"""One S3-compatible server and one Cloud Storage emulator for the storage tests, and a fresh
bucket of either for each test, with the cache in the test's own folder."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Iterator

import pytest

from tests.storage_servers import Bucket, StoreServer, gcs_server, s3_server

_NAMES = itertools.count()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreServer]:
    server = s3_server(tmp_path_factory.mktemp("s3")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreServer]:
    server = gcs_server(tmp_path_factory.mktemp("gcs")).start()
    yield server
    server.stop()


@pytest.fixture(params=["s3", "gs"])
def bucket(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
           tmp_path: Path) -> Bucket:
    """A new bucket of each store in turn; the clients pointed at its server."""
    server: StoreServer = request.getfixturevalue("s3" if request.param == "s3" else "gcs")
    return new_bucket(server, request.param, monkeypatch, tmp_path)


def new_bucket(server: StoreServer, scheme: str, monkeypatch: pytest.MonkeyPatch,
               tmp_path: Path) -> Bucket:
    for key, value in server.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("FLASK_PREDICT_STORAGE_CACHE", str(tmp_path / "cache"))
    return Bucket(server, scheme, f"models-{next(_NAMES)}-{tmp_path.name[-12:].lower()}"
                  .replace("_", "-"))
