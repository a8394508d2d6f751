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


PARSE = "Error parsing text-format tensorflow.serving.ModelServerConfig"


@pytest.mark.parametrize("text, message", [
    # what protobuf's parser refuses: TF Serving's words (its tests look for them), the
    # line and column, then ours
    ("model_config_list { config { name: 'm' }", f"^{PARSE}: 1:41: missing '}}'$"),
    ("model_config_list {\n  config { name: 'm' base_path: $ } }",
     f"^{PARSE}: 2:33: unexpected '\\$'$"),
    ("model_config_list { config { name: } }",
     f"^{PARSE}: 1:36: field 'name' has no value before '}}'$"),
    ("model_config_list { config { name: 'm' } } 7", f"^{PARSE}: 1:44: expected a field name"),
    ("model_config_list { config { name: 'm' base_path: ['/m' } }", f"^{PARSE}: 1:60: missing ']'"),
    ("model_config_list { config { name: 'm' base_path: '/m' color: 1 } }",
     f'^{PARSE}: Message type "tensorflow.serving.ModelConfig" has no field named "color" '
     r"\(fields: name, base_path"),
    ("model_config { config { name: 'm' } }",
     f'^{PARSE}: Message type "tensorflow.serving.ModelServerConfig" has no field named '
     '"model_config"'),
    ("model_config_list { model { name: 'm' } }",
     f'^{PARSE}: Message type "tensorflow.serving.ModelConfigList" has no field named "model"'),
    ("model_config_list { config { name: 'm' version_labels { key: 'x' value: 'y' } } }",
     f"^{PARSE}: version_labels needs a string key and an integer value"),
    ("model_config_list { config { name: 'm' model_version_policy { newest {} } } }",
     f'^{PARSE}: Message type "tensorflow.serving.FileSystemStoragePathSourceConfig.'
     'ServableVersionPolicy" has no field named "newest"'),
    ("model_config_list { config { name: 'm' model_version_policy { all {} latest {} } } }",
     f"^{PARSE}: model_version_policy takes one of latest, all, specific, got all, latest"),
    ("model_config_list: 3", f"^{PARSE}: 'model_config_list' must be a message"),
    # what parses, and TF Serving refuses or we do not serve: our words alone
    ("model_config_list { config { base_path: '/m' } }", "needs a name"),
    ("custom_model_config {}", "only model_config_list"),
    ("model_config_list { config { name: 'm' model_version_policy {} } }", "needs one of"),
])
def test_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        parse_model_config_list(text)
    assert (PARSE in error.value.message) == message.startswith(f"^{PARSE}")


def test_error_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "bad.config"
    file.write_text("model_config_list { config { name: 'm' ")
    with pytest.raises(ConfigError, match="bad.config"):
        read_model_config_file(file)
