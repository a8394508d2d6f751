"""Batching parameters as TF Serving reads them: its text files (the examples of its batching
guide), its defaults and checks in its words, a version folder's batching_params.pbtxt, a
model's own ``batching`` entry, and the settings and flags that carry them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flask_predict.errors import ConfigError
from flask_predict.settings.batching import (PER_MODEL_FILE, BatchingParameters,
                                                  BatchingSettings, from_mapping,
                                                  parse_batching_parameters,
                                                  read_batching_parameters_file)
from flask_predict.settings.app import read_settings
from flask_predict.settings.environ import server_config
from tests.unit.cli.test_cli import command_for, run_main

GUIDE_EXAMPLE = """
max_batch_size { value: 128 }
batch_timeout_micros { value: 0 }
max_enqueued_batches { value: 1000000 }
num_batch_threads { value: 8 }
"""
"""The parameters file of TF Serving's batching guide (``--batching_parameters_file``)."""


def write(folder: Path, text: str, name: str = "batching.txt") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_guides_example_file() -> None:
    assert parse_batching_parameters(GUIDE_EXAMPLE) == BatchingParameters(
        max_batch_size=128, batch_timeout_micros=0, max_enqueued_batches=1000000,
        num_batch_threads=8)


def test_every_field_and_its_syntaxes() -> None:
    text = """
    # a comment
    max_batch_size { value: 64 } batch_timeout_micros: { value: 2000 }
    max_enqueued_batches < value: 4 >
    num_batch_threads { value: 2 }
    thread_pool_name { value: "ours" }
    allowed_batch_sizes: 8 allowed_batch_sizes: 16
    allowed_batch_sizes: [32, 64]
    pad_variable_length_inputs: true
    enable_large_batch_splitting: false
    """
    assert parse_batching_parameters(text) == BatchingParameters(
        max_batch_size=64, batch_timeout_micros=2000, max_enqueued_batches=4,
        num_batch_threads=2, allowed_batch_sizes=(8, 16, 32, 64),
        pad_variable_length_inputs=True)


def test_defaults_are_tf_servings() -> None:
    defaults = parse_batching_parameters("")
    assert (defaults.max_batch_size, defaults.batch_timeout_micros,
            defaults.max_enqueued_batches) == (1000, 0, 10)
    assert defaults.num_batch_threads == (os.cpu_count() or 1)
    assert defaults.allowed_batch_sizes == () and not defaults.pad_variable_length_inputs
    assert not defaults.enable_large_batch_splitting and defaults.batch_rows == 1000


def test_splitting_batches_by_the_execution_size() -> None:
    split = parse_batching_parameters(
        "max_batch_size { value: 1000 } enable_large_batch_splitting: true "
        "max_execution_batch_size { value: 32 } allowed_batch_sizes: [16, 32]")
    assert split.batch_rows == 32 and split.max_batch_size == 1000
    assert parse_batching_parameters("enable_large_batch_splitting: true").batch_rows == 1000


@pytest.mark.parametrize(("text", "message"), [
    ("max_batch_size: 128", "max_batch_size is a wrapper message: write max_batch_size "
                            "{ value: 128 }"),
    ("max_batch_size { value: 1 ", "missing '}'"),
    ("max_batch_size { size: 1 }", "takes one integer field, value"),
    ("max_batch_sizes { value: 1 }", "unknown or unsupported field 'max_batch_sizes'"),
    ("pad_variable_length_inputs: maybe", "pad_variable_length_inputs must be true or false"),
    ("allowed_batch_sizes: 'a'", "allowed_batch_sizes must be integers"),
    ("max_batch_size { value: 0 }", "max_batch_size must be positive; was 0"),
    ("batch_timeout_micros { value: -1 }", "batch_timeout_micros must be non-negative; was -1"),
    ("num_batch_threads { value: 0 }", "num_batch_threads must be positive; was 0"),
    ("max_batch_size { value: 64 } allowed_batch_sizes: [32, 16, 64]",
     "allowed_batch_sizes entries must be monotonically increasing"),
    ("max_batch_size { value: 64 } allowed_batch_sizes: [16, 32]",
     "Last entry in allowed_batch_sizes must match max_batch_size; last entry was 32; "
     "expected 64"),
    ("enable_large_batch_splitting: true max_execution_batch_size { value: 8 } "
     "allowed_batch_sizes: [4]", "must match max_execution_batch_size; last entry was 4; "
                                 "expected 8"),
])
def test_a_file_that_does_not_parse_says_so_as_tf_serving_does(
        tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        read_batching_parameters_file(path)
    assert caught.value.message.startswith(f"Invalid protobuf file: '{path}': ")
    assert message in caught.value.message
    assert "model config text" not in caught.value.message


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read batching parameters file"):
        read_batching_parameters_file(tmp_path / "absent.txt")


def test_a_models_own_parameters_in_json() -> None:
    assert from_mapping({"max_batch_size": {"value": 8}, "allowed_batch_sizes": [4, 8],
                         "batch_timeout_micros": 500, "pad_variable_length_inputs": "true"},
                        "m") == BatchingParameters(max_batch_size=8, batch_timeout_micros=500,
                                                   allowed_batch_sizes=(4, 8),
                                                   pad_variable_length_inputs=True)
    with pytest.raises(ConfigError, match=r"m: unknown batching field\(s\) \['max_batch'\]"):
        from_mapping({"max_batch": 8}, "m")
    with pytest.raises(ConfigError, match="m: batching: max_batch_size must be an integer"):
        from_mapping({"max_batch_size": "8"}, "m")
    with pytest.raises(ConfigError, match="m: batching: Last entry in allowed_batch_sizes"):
        from_mapping({"max_batch_size": 8, "allowed_batch_sizes": [4]}, "m")


def test_which_parameters_a_version_batches_with(tmp_path: Path) -> None:
    own = BatchingParameters(max_batch_size=4)
    server = BatchingParameters(max_batch_size=64)
    folder = tmp_path / "1"
    folder.mkdir()
    off = BatchingSettings(enabled=False, parameters=server)
    on = BatchingSettings(enabled=True, parameters=server)
    per_model = BatchingSettings(enabled=True, parameters=server, per_model=True)
    assert off.for_version(None, folder) is None
    assert off.for_version(True, folder) == server and off.for_version(own, folder) == own
    assert on.for_version(None, folder) == server and on.for_version(False, folder) is None
    assert per_model.for_version(None, folder) is None  # no file: not batched, as TF Serving
    write(folder, "max_batch_size { value: 16 }", PER_MODEL_FILE)
    assert per_model.for_version(None, folder) == BatchingParameters(max_batch_size=16)
    assert per_model.for_version(own, folder) == own
    write(folder, "max_batch_size: 16", PER_MODEL_FILE)
    with pytest.raises(ConfigError, match="Invalid protobuf file: .*batching_params.pbtxt"):
        per_model.for_version(None, folder)


def test_settings_and_the_model_config(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    path = write(tmp_path, "max_batch_size { value: 32 } batch_timeout_micros { value: 100 }")
    settings = read_settings({
        "PREDICT_BATCHING": "true", "PREDICT_BATCHING_PARAMETERS_FILE": str(path),
        "PREDICT_MODELS": {"m": {"base_path": str(tmp_path / "m"),
                                 "batching": {"max_batch_size": 2}},
                           "n": {"base_path": str(tmp_path / "m"), "batching": False}}})
    assert settings.batching == BatchingSettings(
        enabled=True, parameters=BatchingParameters(max_batch_size=32,
                                                    batch_timeout_micros=100))
    models = {spec.name: spec for spec in settings.models}
    assert models["m"].batching == BatchingParameters(max_batch_size=2)
    assert models["m"].options == {} and models["n"].batching is False
    assert read_settings({}).batching == BatchingSettings()
    with pytest.raises(ConfigError, match="PREDICT_BATCHING_PARAMETERS_FILE: Invalid protobuf"):
        read_settings({"PREDICT_BATCHING_PARAMETERS_FILE": str(write(tmp_path, "x: 1"))})
    with pytest.raises(ConfigError, match="model 'm': batching must be true, false or"):
        read_settings({"PREDICT_MODELS": {"m": {"base_path": str(tmp_path / "m"),
                                                "batching": 3}}})


def test_serve_passes_the_batching_flags_on(tmp_path: Path) -> None:
    path = write(tmp_path, GUIDE_EXAMPLE)
    _, env = command_for("--model_base_path", str(tmp_path), "--enable_batching",
                         f"--batching_parameters_file={os.path.relpath(path)}",
                         "--enable_per_model_batching_parameters=false")
    assert json.loads(env["FLASK_PREDICT_BATCHING"]) is True
    assert env["FLASK_PREDICT_BATCHING_PARAMETERS_FILE"] == str(path)
    assert json.loads(env["FLASK_PREDICT_PER_MODEL_BATCHING_PARAMETERS"]) is False
    served = read_settings(server_config(env)).batching  # as each process of the server reads
    assert served == BatchingSettings(enabled=True, parameters=parse_batching_parameters(
        GUIDE_EXAMPLE))
    _, env = command_for("--model_base_path", str(tmp_path))
    assert not any("BATCHING" in name for name in env)


def test_serve_refuses_a_parameters_file_that_does_not_parse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "max_batch_size: 8")
    status, _, err = run_main(capsys, "serve", "--model_base_path", str(tmp_path),
                              "--enable_batching", "--batching_parameters_file", str(path))
    assert status == 2
    assert f"--batching_parameters_file: Invalid protobuf file: '{path}'" in err
