"""The lazy tier over a bucket root, on the S3 and Cloud Storage emulators: each model's
folder mirrored on its first request, then served from the mirror; a name the bucket does
not hold answered 404, and not asked of the store again during the back-off. The index lists
the bucket's folders, listed again once the listing's ten seconds have passed; a store that
hangs or has no such bucket keeps it answering with what was last listed, logged once."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict.errors import ModelNotFound
from flask_predict.extension import close_app
from flask_predict.models.lazy import LazyTier
from flask_predict.models.plugins import load_predictor_class
from flask_predict.models.root_folders import LIST_SECONDS, WAIT_SECONDS
from flask_predict.settings.lazy import LazySettings
from flask_predict.storage import gcs, s3
from flask_predict.storage.store import CONNECT_SECONDS
from tests.conftest import AppFactory
from tests.lazy_models import linear_answer, train_linear
from tests.storage.test_storage_gunicorn import wait_for
from tests.storage_servers import Bucket, Stall

INFER = {"inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 3],
                     "data": [1.0, 2.0, 3.0]}]}

ROW = [1.0, 2.0, 3.0]


def test_models_load_from_a_bucket_root(bucket: Bucket, tmp_path: Path) -> None:
    for seed in (3, 5):
        bucket.upload(train_linear(tmp_path / f"m{seed}", seed), f"root/m{seed}")
    lazy = LazyTier(LazySettings(bucket.uri("root"), 10**9, 30.0), load_predictor_class)
    for seed in (3, 5):
        loaded = lazy.model(f"m{seed}").default()
        outputs = loaded.predictor.predict_tensors({"input-0": np.array([ROW])})
        assert float(next(iter(outputs.values()))[0]) == linear_answer(seed, ROW)
        assert loaded.spec.base_path == bucket.uri(f"root/m{seed}")
    with pytest.raises(ModelNotFound):
        lazy.model("absent")
    bucket.upload(train_linear(tmp_path / "absent", 7), "root/absent")
    with pytest.raises(ModelNotFound):  # the back-off: not asked of the store again yet
        lazy.model("absent")


def index(client: Any) -> dict[str, dict[str, str]]:
    got = client.post("/v2/repository/index")
    assert got.status_code == 200, got.get_json()
    return {entry["name"]: entry for entry in got.get_json()}


def test_the_index_lists_the_buckets_folders(bucket: Bucket, tmp_path: Path,
                                             make_app: AppFactory) -> None:
    for seed in (3, 5):
        bucket.upload(train_linear(tmp_path / f"m{seed}", seed), f"root/m{seed}")
    bucket.put("root/.copying/1/model.joblib", b"half")  # hidden: no model
    bucket.put("root/README", b"a file beside the folders")
    bucket.put("elsewhere/m9/1/model.joblib", b"outside the root")
    app = make_app({}, lazy_root=bucket.uri("root"))
    try:
        client = app.test_client()
        listed = index(client)
        assert listed == {name: {"name": name, "state": "UNAVAILABLE", "reason": "not loaded"}
                          for name in ("m3", "m5")}
        assert client.post("/v2/models/m3/infer", json=INFER).status_code == 200
        assert index(client)["m3"] == {"name": "m3", "version": "1", "state": "READY",
                                       "reason": ""}
        # a folder never loaded here is the root's: unloaded, not "not found"
        assert client.post("/v2/repository/models/m5/unload").status_code == 200
        assert index(client)["m5"]["reason"] == "unloaded"
        assert client.post("/v2/repository/models/m9/unload").status_code == 404
    finally:
        close_app(app)


def test_a_folder_uploaded_after_start_is_listed_once_the_listing_is_due(
        bucket: Bucket, tmp_path: Path) -> None:
    bucket.upload(train_linear(tmp_path / "m3", 3), "root/m3")
    now = [0.0]
    lazy = LazyTier(LazySettings(bucket.uri("root"), 10**9, 30.0), load_predictor_class,
                    clock=lambda: now[0])
    assert [entry.name for entry in lazy.entries()] == ["m3"]
    bucket.upload(train_linear(tmp_path / "late", 7), "root/late")
    now[0] = LIST_SECONDS - 1
    assert lazy.names() == ["m3"] and not lazy.exists("late")  # not listed again yet
    now[0] = LIST_SECONDS
    assert lazy.entries()[0].name == "late" and lazy.entries()[0].state == "UNAVAILABLE"
    assert lazy.exists("late")


def test_a_store_that_hangs_keeps_the_index_answering(
        bucket: Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Behind a front that stops answering, with the clients' read timeout at 1s: the index
    answers with the last listing after a bounded wait; the failure is logged once, however
    many listings fail, and once more when the store answers again."""
    caplog.set_level(logging.INFO, "flask_predict")
    for seed in (3, 5):
        bucket.upload(train_linear(tmp_path / f"m{seed}", seed), f"root/m{seed}")
    stall = Stall(bucket.server)
    monkeypatch.setenv("AWS_ENDPOINT_URL" if bucket.scheme == "s3" else
                       "STORAGE_EMULATOR_HOST", stall.url)
    monkeypatch.setattr(s3, "READ_SECONDS", 1.0)
    monkeypatch.setattr(gcs, "TIMEOUT", (CONNECT_SECONDS, 1.0))
    now = [0.0]
    lazy = LazyTier(LazySettings(bucket.uri("root"), 10**9, 30.0), load_predictor_class,
                    clock=lambda: now[0])

    def said(text: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if text in r.getMessage()]

    def listing() -> bool:
        return any(t.name.startswith("flask-predict-list") for t in threading.enumerate())

    try:
        assert lazy.names() == ["m3", "m5"]
        lazy.model("m3")
        stall.stall()  # accepts, never answers
        for _ in range(2):
            now[0] += LIST_SECONDS
            started = time.monotonic()
            assert lazy.names() == ["m3", "m5"]  # the last listing, after a bounded wait
            assert lazy.exists("m5") and not lazy.exists("late")
            assert time.monotonic() - started < WAIT_SECONDS + 1
            wait_for(lambda: not listing())
        failed = said("index lists the models known here")
        assert len(failed) == 1, failed  # once, not on every listing
        assert f"{bucket.uri('root')}: cannot list: the store is unreachable" in failed[0]
        bucket.upload(train_linear(tmp_path / "late", 7), "root/late")
        stall.release()
        now[0] += LIST_SECONDS
        assert lazy.names() == ["late", "m3", "m5"]
        assert len(said(f"the lazy root {bucket.uri('root')} is listed again")) == 1
    finally:
        stall.close()


def test_a_root_whose_bucket_is_not_there_lists_no_folder(
        bucket: Bucket, make_app: AppFactory, model_config: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    absent = bucket.uri("root").replace(bucket.name, f"{bucket.name}-absent")
    app = make_app({"iris": model_config["iris"]}, lazy_root=absent)
    try:
        client = app.test_client()
        for _ in range(2):
            assert list(index(client)) == ["iris"]
    finally:
        close_app(app)
    listed = [r for r in caplog.records if "index lists the models" in r.getMessage()]
    assert len(listed) == 1 and "not found" in listed[0].getMessage()
