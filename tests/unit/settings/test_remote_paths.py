"""Reading the settings does no I/O: a remote ``base_path`` is kept as written and fetched
only where its model loads (:func:`flask_predict.storage.fetch`)."""

from __future__ import annotations

import os
import select
import socket
from pathlib import Path
from typing import Iterator

import pytest

from flask_predict import storage
from flask_predict.settings.app import read_settings
from flask_predict.settings.environ import server_config


@pytest.fixture
def silent_store() -> Iterator[socket.socket]:
    """A socket on 127.0.0.1 that takes connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener
    finally:
        listener.close()


def test_remote_base_paths_are_read_without_a_network_call(
        silent_store: socket.socket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = silent_store.getsockname()
    url = f"http://{host}:{port}"
    cache = tmp_path / "cache"
    environ = {"FLASK_PREDICT_MODELS": '{"iris": {"base_path": "s3://models/iris"}, '
                                       '"half": {"base_path": "gs://models/half"}}',
               "AIP_STORAGE_URI": "gs://vertex/model", "MODEL_NAME": "echo",
               "MODEL_BASE_PATH": "s3://models", "FLASK_PREDICT_STORAGE_CACHE": str(cache),
               "AWS_ENDPOINT_URL": url, "STORAGE_EMULATOR_HOST": url,
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    settings = read_settings(server_config())
    assert {spec.name: spec.base_path for spec in settings.models} == \
        {"iris": "s3://models/iris", "half": "gs://models/half"}
    ready, _, _ = select.select([silent_store], [], [], 0)
    assert not ready, "reading the settings connected to the store"
    assert not cache.exists()
    assert storage.local_path("s3://models/iris").startswith(str(cache))


def test_vertex_storage_uri_is_kept_as_written(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_PREDICT_STORAGE_CACHE", str(tmp_path / "cache"))
    settings = read_settings(server_config({"AIP_STORAGE_URI": "gs://vertex/model"}))
    assert [(spec.name, spec.base_path) for spec in settings.models] == \
        [("model", "gs://vertex/model")]
    assert not os.path.exists(tmp_path / "cache")
