"""What the server says of a bucket's objects names the URI the user configured, never the
copy in the cache: the start-up line, the log, readiness, the status page, load errors."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from flask import Flask

from flask_predict import FlaskPredict, storage
from flask_predict.models.check import as_json, check, render
from flask_predict.errors import ConfigError
from tests import models
from tests.storage_servers import Bucket


def test_a_junk_object_is_named_by_its_uri(bucket: Bucket, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    bucket.put("models/junk/1/model.joblib", b"not a pickle at all\n" * 4)
    models.train_iris(tmp_path / "local" / "iris")
    bucket.upload(tmp_path / "local" / "iris", "models/iris")
    junk = bucket.uri("models/junk/1/model.joblib")
    cache = os.environ["FLASK_PREDICT_STORAGE_CACHE"]
    config = {"junk": {"base_path": bucket.uri("models/junk"), "predictor": "sklearn"},
              "iris": {"base_path": bucket.uri("models/iris")}}

    app = Flask("stops")
    app.config.update(PREDICT_MODELS=config, PREDICT_POLL_SECONDS=0)
    with pytest.raises(ConfigError) as raised:
        FlaskPredict(app)
    assert f"model 'junk' version 1 failed to load from {junk}: " in raised.value.message
    assert cache not in raised.value.message

    app = Flask("rest")
    app.config.update(PREDICT_MODELS=config, PREDICT_EXIT_ON_LOAD_ERROR=False,
                      PREDICT_STATUS_PATH="/", PREDICT_POLL_SECONDS=0)
    with caplog.at_level(logging.DEBUG, "flask_predict"):
        FlaskPredict(app)
    client = app.test_client()
    answers = [client.get(route) for route in
               ("/", "/v2/health/ready", "/v2/models/junk/ready", "/v2/models/junk",
                "/v1/models/junk", "/v1/models/junk/metadata")]
    assert answers[1].status_code == 200 and answers[2].status_code == 400
    said = "\n".join([*(answer.get_data(as_text=True) for answer in answers),
                      *(record.getMessage() for record in caplog.records)])
    assert junk in said
    assert cache not in said and os.path.realpath(cache) not in said


def test_shown_maps_links_objects_and_flat_prefixes(bucket: Bucket) -> None:
    bucket.put("versions/00000002/model.joblib", b"2")
    bucket.put("flat/model.joblib", b"1")
    versioned = storage.resolve(bucket.uri("versions"))
    flat = storage.resolve(bucket.uri("flat"))
    objects = os.path.realpath(Path(versioned, "2"))
    assert ".objects" in objects
    assert storage.shown(f"cannot read '{versioned}/2/model.joblib'") == \
        f"cannot read '{bucket.uri('versions/00000002/model.joblib')}'"
    assert storage.shown(f"{objects}/model.joblib: bad") == \
        f"{bucket.uri('versions/00000002/model.joblib')}: bad"
    assert storage.shown(f"in {versioned!r}") == f"in {bucket.uri('versions')!r}"
    assert storage.shown(f"{flat}/1/model.joblib") == bucket.uri("flat/model.joblib")
    assert storage.shown(f"{os.path.realpath(Path(flat, '1'))}/model.joblib") == \
        bucket.uri("flat/model.joblib")
    assert storage.shown("/srv/models/iris/1/model.joblib") == "/srv/models/iris/1/model.joblib"


def test_check_names_the_bucket(bucket: Bucket) -> None:
    bucket.put("models/junk/1/model.joblib", b"not a pickle at all\n" * 4)
    report = check(bucket.uri("models/junk"), predictor="sklearn")
    cache = os.environ["FLASK_PREDICT_STORAGE_CACHE"]
    for text in (render(report), as_json(report)):
        assert bucket.uri("models/junk/1") in text and cache not in text
