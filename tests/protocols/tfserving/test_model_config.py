"""TF Serving's text-format model config file, read into our model specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from flask_predict.settings.model_config import read_model_config_file
from flask_predict.errors import ConfigError
from flask_predict.settings.tfserving_config import parse_model_config_list, parse_text
from flask_predict.types import VersionPolicy


def test_full_config(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name / "1").mkdir(parents=True)
    file = tmp_path / "models.config"
    file.write_text("""
# TF Serving deployment
model_config_list {
  config {
    name: 'a'
    base_path: "a"              # relative to the file
    model_platform: "tensorflow"
    model_version_policy { specific { versions: 1 versions: 2 } }
    version_labels { key: "stable" value: 1 }
    version_labels { key: "canary" value: 2 }
  }
  config: { name: "b", base_path: "b"; model_version_policy: { all: {} } }
  config < name: "c" base_path: "c" model_version_policy { latest { num_versions: 2 } } >
}
""")
    a, b, c = read_model_config_file(file)
    assert (a.name, a.predictor, a.base_path) == ("a", "tensorflow", str(tmp_path / "a"))
    assert a.version_policy == VersionPolicy("specific", versions=(1, 2))
    assert a.labels == {"stable": 1, "canary": 2}
    assert b.version_policy == VersionPolicy("all") and b.predictor is None
    assert c.version_policy == VersionPolicy("latest", num_versions=2)


def test_parse_text_scalars_and_lists() -> None:
    assert parse_text('a: "x\\"y" b: 2 c: 1.5 d: ENUM e: [1, 2] f { g: true }') == [
        ("a", 'x"y'), ("b", 2), ("c", 1.5), ("d", "ENUM"), ("e", 1), ("e", 2),
        ("f", [("g", "true")])]


def test_latest_without_count_serves_one() -> None:
    (entry,) = parse_model_config_list(
        'model_config_list { config { name: "m" base_path: "/m" '
        "model_version_policy { latest {} } } }")
    assert entry["version_policy"] == {"latest": {}}


@pytest.mark.parametrize("text, message", [
    ("model_config_list { config { name: 'm' }", "missing '}'"),
    ("model_config_list { config { base_path: '/m' } }", "needs a name"),
    ("model_config_list { config { name: 'm' base_path: '/m' color: 1 } }",
     "unsupported field 'color'"),
    ("custom_model_config {}", "only model_config_list"),
    ("model_config_list { config { name: 'm' version_labels { key: 'x' value: 'y' } } }",
     "integer value"),
    ("model_config_list { config { name: 'm' model_version_policy { newest {} } } }",
     "unknown model_version_policy"),
    ("model_config_list { config { name: 'm' base_path: $ } }", "unexpected '\\$'"),
])
def test_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model_config_list(text)


def test_error_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "bad.config"
    file.write_text("model_config_list { config { name: 'm' ")
    with pytest.raises(ConfigError, match="bad.config"):
        read_model_config_file(file)
