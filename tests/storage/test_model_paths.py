"""Remote model paths wherever a model path is taken: ``serve``'s flags, TF Serving's
environment and model config file, our JSON config; and several processes resolving one
path at once, with one download between them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flask_predict import storage
from flask_predict.errors import ConfigError
from flask_predict.storage.artifacts import version_folders
from flask_predict.settings.environ import config_from_environ
from flask_predict.settings.model_config import load_models
from flask_predict.storage.cache import SETTLE_SECONDS
from flask_predict.types import ModelSpec
from tests.e2e.server import ROOT
from tests.storage_servers import Bucket
from tests.unit.cli.test_cli import command_for


def test_serve_flags_and_environment_keep_remote_paths() -> None:
    _, env = command_for("--model_name", "iris", "--model_base_path", "s3://models/iris")
    assert json.loads(env["FLASK_PREDICT_MODELS"]) == {"iris": {"base_path": "s3://models/iris"}}
    assert config_from_environ({"MODEL_NAME": "iris", "MODEL_BASE_PATH": "gs://models"}) == \
        {"PREDICT_MODELS": {"iris": {"base_path": "gs://models/iris"}}}


def test_tf_serving_model_config_file(bucket: Bucket, tmp_path: Path) -> None:
    bucket.put("tf/half/1/saved_model.pb", b"graph 1")
    bucket.put("tf/half/2/saved_model.pb", b"graph 2")
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "half" base_path: "%s" '
                      'model_platform: "tensorflow" } }' % bucket.uri("tf/half"))
    (spec,) = load_models(None, config)
    assert spec.base_path == bucket.uri("tf/half")  # read as written, nothing fetched
    assert not os.path.exists(storage.local_path(spec.base_path))
    assert storage.fetch([(spec.base_path, spec.serves)]) == {}  # where the model loads
    folder = storage.local_path(spec.base_path)
    assert folder.startswith(str(tmp_path / "cache"))
    # TF Serving's default policy serves the latest version: the only one downloaded
    assert sorted(version_folders(folder)) == [2]
    assert Path(folder, "2", "saved_model.pb").read_bytes() == b"graph 2"


RESOLVE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
from flask_predict import storage
print("base", storage.resolve(sys.argv[1]))
"""


def test_several_processes_at_once_download_once(bucket: Bucket, tmp_path: Path) -> None:
    for version in (1, 2, 3):
        bucket.put(f"m/{version}/model.bin", os.urandom(200_000))
    env = dict(os.environ)
    processes = [subprocess.Popen([sys.executable, "-c", RESOLVE, bucket.uri("m")], cwd=ROOT,
                                  env=env, stdout=subprocess.PIPE, text=True)
                 for _ in range(4)]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0]
    lines = "".join(outputs).splitlines()
    assert len({line for line in lines if line.startswith("base ")}) == 1
    assert len([line for line in lines if "downloaded (" in line]) == 3, lines


def test_only_the_versions_the_policy_serves_are_downloaded(bucket: Bucket,
                                                            tmp_path: Path) -> None:
    for version in (1, 2, 3, 4):
        bucket.put(f"m/{version}/model.bin", b"v%d" % version)
    config = tmp_path / "models.json"

    def configure(policy: object, **entry: object) -> ModelSpec:
        config.write_text(json.dumps({"m": {"base_path": bucket.uri("m"),
                                            "version_policy": policy, **entry}}))
        (spec,) = load_models(None, config)
        return spec

    spec = configure({"specific": {"versions": [1, 3]}})
    folder = storage.resolve(spec.base_path, spec.serves)
    cached = Path(folder, ".objects")
    assert sorted(version_folders(folder)) == [1, 3]
    assert sorted(name.split("-")[0] for name in os.listdir(cached)) == ["1", "3"]
    # the config changes on reload: the watcher's next poll fetches what it serves now
    spec = configure({"latest": {"num_versions": 2}}, version_labels={"stable": 2})
    storage.poll([(spec.base_path, spec.serves)], poll_seconds=0, wait=60)
    assert sorted(version_folders(folder)) == [1, 2, 3, 4]
    assert Path(folder, "2", "model.bin").read_bytes() == b"v2"
    spec = configure({"latest": {}})
    bucket.put("m/5/model.bin", b"v5")
    for _ in range(2):  # a new version settles over two listings
        time.sleep(SETTLE_SECONDS)
        storage.poll([(spec.base_path, spec.serves)], poll_seconds=0, wait=60)
    assert sorted(version_folders(folder)) == [1, 2, 3, 4, 5]
    bucket.put("m/6/model.bin", b"v6")  # beside a version 5 the policy serves no more
    spec = configure({"specific": {"versions": [5]}})
    for _ in range(2):
        time.sleep(SETTLE_SECONDS)
        storage.poll([(spec.base_path, spec.serves)], poll_seconds=0, wait=60)
    assert 6 not in version_folders(folder)


def test_a_policy_that_serves_no_listed_version_is_one_line(bucket: Bucket,
                                                            tmp_path: Path) -> None:
    bucket.put("m/1/model.bin", b"v1")
    with pytest.raises(ConfigError, match=r"/m: its version policy serves none of the "
                                          r"versions listed \(\[1\]\)"):
        storage.resolve(bucket.uri("m"), choose=lambda versions: [7])
