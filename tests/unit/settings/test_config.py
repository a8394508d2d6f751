"""config: PREDICT_* keys, model specs, TF Serving environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flask_predict.settings.app import read_settings
from flask_predict.settings.environ import config_from_environ
from flask_predict.errors import ConfigError
from flask_predict.protocols.aiplatform.settings import of as aiplatform_settings
from flask_predict.types import VersionPolicy


@pytest.fixture()
def base(tmp_path: Path) -> Path:
    (tmp_path / "m" / "1").mkdir(parents=True)
    return tmp_path / "m"


def test_defaults(base: Path) -> None:
    settings = read_settings({"PREDICT_MODELS": {"m": {"base_path": str(base)}}})
    assert settings.protocols and "aiplatform" in settings.protocols
    assert settings.process.threads >= 1 and settings.url_prefix == ""
    (spec,) = settings.models
    assert spec.name == "m" and spec.base_path == str(base.resolve())
    assert spec.version_policy == VersionPolicy("latest", 1) and spec.predictor is None


def test_model_entry_options_and_labels(base: Path) -> None:
    settings = read_settings({"PREDICT_MODELS": {"m": {
        "base_path": str(base), "predictor": "custom", "class": "pkg.Cls",
        "version_labels": {"stable": 1}, "default_version": "stable",
        "version_policy": {"specific": {"versions": [1, 2]}}}}})
    (spec,) = settings.models
    assert spec.options == {"class": "pkg.Cls"} and spec.labels == {"stable": 1}
    assert spec.default_version == "stable"
    assert spec.version_policy == VersionPolicy("specific", versions=(1, 2))


def test_models_as_list_and_json_string(base: Path) -> None:
    listed = read_settings({"PREDICT_MODELS": [{"name": "m", "base_path": str(base)}]})
    text = read_settings({"PREDICT_MODELS": json.dumps({"m": {"base_path": str(base)}})})
    assert listed.models == text.models


def test_config_file_paths_are_relative_to_it(tmp_path: Path, base: Path) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"models": {"m": {"base_path": "m"}}}))
    settings = read_settings({"PREDICT_MODEL_CONFIG_FILE": str(config)})
    assert settings.models[0].base_path == str(base.resolve())


@pytest.mark.parametrize("config, message", [
    ({"PREDICT_MODLES": {}}, "unknown setting"),
    ({"PREDICT_PROTOCOLS": ["soap"]}, "unknown protocol"),
    ({"PREDICT_MAX_REQUEST_BYTES": "lots"}, "must be a number"),
    ({"PREDICT_THREADS": 0}, "at least 1"),
    ({"PREDICT_URL_PREFIX": "api"}, "must start with '/'"),
    ({"PREDICT_MODELS": {"m": {}}}, "'base_path' is required"),
    ({"PREDICT_MODELS": {"m": {"base_path": "/no/such/dir"}}}, "not a directory"),
    ({"PREDICT_MODELS": {"a/b": {"base_path": "."}}}, "model name"),
    ({"PREDICT_MODELS": "{not json"}, "not valid JSON"),
    ({"PREDICT_MODELS": 3}, "must map model names"),
    ({"PREDICT_MODEL_CONFIG_FILE": "/no/such/file.json"}, "cannot read"),
    ({"PREDICT_GRPS_START_ONLINE": "maybe"}, "true or false"),
])
def test_bad_settings_name_the_problem(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_settings(config)


@pytest.mark.parametrize("config, message", [
    ({"PREDICT_TIMEOUT_SECOND": 1},
     "unknown setting 'PREDICT_TIMEOUT_SECOND'; did you mean 'PREDICT_TIMEOUT_SECONDS'?"),
    ({"PREDICT_GRPS_DEFAULT_MODLE": "m"},  # a protocol's own section too
     "unknown setting 'PREDICT_GRPS_DEFAULT_MODLE'; did you mean 'PREDICT_GRPS_DEFAULT_MODEL'?"),
    ({"PREDICT_FOO_BAR": 1},  # alike in nothing but the prefix: no guess, and no list
     "unknown setting 'PREDICT_FOO_BAR' (every setting: the configuration reference, "
     "docs/configuration.md)"),
    ({"PREDICT_MODEL": {}, "PREDICT_WORKER": 2},
     "unknown setting 'PREDICT_MODEL'; did you mean 'PREDICT_MODELS'?; unknown setting "
     "'PREDICT_WORKER'; did you mean 'PREDICT_WORKERS'?"),
    ({"PREDICT_PROTOCOLS": ["tfservin"]},
     "PREDICT_PROTOCOLS: unknown protocol 'tfservin'; did you mean 'tfserving'? (choose from "
     "['aiplatform', 'grps', 'kserve_v2', 'mlflow', 'tfserving'])"),
])
def test_a_misspelt_setting_gets_the_closest_name_in_one_line(config: dict[str, object],
                                                              message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        read_settings(config)
    assert caught.value.message == message


@pytest.mark.parametrize("entry, message", [
    ({"version_policy": {"newest": {}}}, "unknown version_policy"),
    ({"version_policy": {"specific": {}}}, "needs 'versions'"),
    ({"version_labels": {"a": "x"}}, "version numbers"),
    ({"default_version": "nope"}, "neither a label"),
    ({"predictor": 3}, "plugin name"),
])
def test_bad_model_entries(base: Path, entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_settings({"PREDICT_MODELS": {"m": {"base_path": str(base), **entry}}})


def test_duplicate_model_names(tmp_path: Path, base: Path) -> None:
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"m": {"base_path": str(base)}}))
    with pytest.raises(ConfigError, match="configured twice"):
        read_settings({"PREDICT_MODELS": {"m": {"base_path": str(base)}},
                       "PREDICT_MODEL_CONFIG_FILE": str(config)})


def test_threads_default_to_a_share_of_the_cores(base: Path) -> None:
    import os

    settings = read_settings({"PREDICT_WORKERS": 64})
    assert settings.process.threads == max(1, (os.cpu_count() or 1) // 64)
    assert read_settings({"PREDICT_THREADS": "3"}).process.threads == 3


def test_tfserving_environment() -> None:
    config = config_from_environ({"MODEL_NAME": "half", "MODEL_BASE_PATH": "/srv/models"})
    assert config == {"PREDICT_MODELS": {"half": {"base_path": "/srv/models/half"}}}
    assert config_from_environ({}) == {}


def test_vertex_environment() -> None:
    config = config_from_environ({"AIP_PREDICT_ROUTE": "/v1/endpoints/1/deployedModels/2:predict",
                                  "AIP_HEALTH_ROUTE": "/v1/endpoints/1/deployedModels/2"})
    section = aiplatform_settings(read_settings(config))
    assert section.vertex_predict_route == "/v1/endpoints/1/deployedModels/2:predict"
    assert section.vertex_health_route == "/v1/endpoints/1/deployedModels/2"
    with pytest.raises(ConfigError, match="must be a path"):
        read_settings({"PREDICT_VERTEX_HEALTH_ROUTE": "health"})


def test_grpc_is_off_unless_a_port_is_set_and_bounded_like_rest(base: Path) -> None:
    models = {"m": {"base_path": str(base)}}
    settings = read_settings({"PREDICT_MODELS": models, "PREDICT_MAX_REQUEST_BYTES": 1000})
    assert settings.grpc.port is None and settings.grpc.max_message_bytes == 1000
    settings = read_settings({"PREDICT_MODELS": models, "PREDICT_GRPC_PORT": "8500",
                              "PREDICT_GRPC_MAX_MESSAGE_BYTES": 10})
    assert (settings.grpc.port, settings.grpc.host, settings.grpc.max_message_bytes) == \
        (8500, "0.0.0.0", 10)
    for port in (-1, 70000, "x"):
        with pytest.raises(ConfigError, match="PREDICT_GRPC_PORT"):
            read_settings({"PREDICT_MODELS": models, "PREDICT_GRPC_PORT": port})


def test_the_lazy_tier_is_off_unless_a_root_is_set(tmp_path: Path) -> None:
    assert read_settings({}).lazy is None
    lazy = read_settings({"PREDICT_LAZY_ROOT": str(tmp_path) + "/",
                          "PREDICT_LAZY_MAX_BYTES": "1000"}).lazy
    assert lazy is not None
    assert (lazy.root, lazy.max_bytes, lazy.retry_seconds) == (str(tmp_path), 1000, 30.0)
    remote = read_settings({"PREDICT_LAZY_ROOT": "gs://bucket/models/"}).lazy
    assert remote is not None and remote.root == "gs://bucket/models"


@pytest.mark.parametrize("key, value", [("PREDICT_LAZY_MAX_BYTES", 0),
                                        ("PREDICT_LAZY_MAX_BYTES", "lots"),
                                        ("PREDICT_LAZY_RETRY_SECONDS", -1),
                                        ("PREDICT_LAZY_ROOT", 5)])
def test_bad_lazy_settings_name_their_key(tmp_path: Path, key: str, value: object) -> None:
    config = {"PREDICT_LAZY_ROOT": str(tmp_path), key: value}
    with pytest.raises(ConfigError, match=key):
        read_settings(config)
