"""startup: what every way of starting checks before and after the first load (the master's
check of model settings, the start-up rule, the one line)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from flask_predict import ConfigError
from flask_predict.settings.app import read_settings
from flask_predict.models.served import FAILED_TO_LOAD, ServedModel, VersionStatus
from flask_predict.storage.artifacts import version_folders, version_path
from flask_predict.models.startup import (StartFailed, cause_of, check_first_load, check_models,
                                        failure_line, failures, settle, stop_with)
from flask_predict.types import ModelSpec


def settings_for(tmp_path: Path, **entry: Any) -> Any:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.bst").write_bytes(b"")
    return read_settings({"PREDICT_MODELS": {"m": {"base_path": str(tmp_path / "m"), **entry}}})


@pytest.mark.parametrize("entry, message", [
    ({"version_polcy": {"all": {}}}, "unknown setting 'version_polcy'; did you mean "
                                     "'version_policy'?"),
    ({"predicter": "xgboost"}, "unknown setting 'predicter'; did you mean 'predictor'?"),
    ({"nthreads": 2}, "unknown setting 'nthreads'; did you mean 'nthread'?"),
    ({"predictor": "xgbost"}, "no predictor 'xgbost'; did you mean 'xgboost'?"),
])
def test_typos_in_model_settings_stop_the_master_with_one_line(
        tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_models(settings_for(tmp_path, **entry).models)
    assert message in info.value.message
    assert "\n" not in info.value.message


def test_declared_options_pass(tmp_path: Path) -> None:
    check_models(settings_for(tmp_path, nthread=2, outputs=["predict"]).models)


# --- the one line ---------------------------------------------------------------------------

class NativeError(Exception):
    """What XGBoost raises: its message ends with a backtrace of native frames."""


def test_the_cause_is_one_line_without_a_native_backtrace() -> None:
    exc = NativeError('[10:12:23] /src/json.cc:409: Expecting: """, got: "98 "\n'
                      '    rner": {broken\n    ~~~~~~~^~~~\nStack trace:\n'
                      '  [bt] (0) /venv/lib/libxgboost.so(+0x2c1a8c) [0x7f26]\n'
                      '  [bt] (1) /venv/lib/libxgboost.so(XGBoosterLoadModel+0xe6)\n\n')
    assert cause_of(exc) == ('NativeError: /src/json.cc:409: Expecting: """, got: "98 " '
                             'rner": {broken ~~~~~~~^~~~')
    assert cause_of(ConfigError("no plugin for 'x'")) == "no plugin for 'x'"
    assert cause_of(RuntimeError()) == "RuntimeError"


def served(tmp_path: Path, name: str, statuses: dict[int, VersionStatus],
           loaded: bool = False) -> ServedModel:
    base = tmp_path / name
    for version in statuses:
        (base / str(version)).mkdir(parents=True, exist_ok=True)
    (base / "1").mkdir(parents=True, exist_ok=True)
    (base / "1" / "model.json").write_text("{}")
    versions: dict[int, Any] = {1: object()} if loaded else {}
    return ServedModel(ModelSpec(name=name, base_path=str(base)), versions, statuses)


def failed(version: int, cause: str) -> VersionStatus:
    return VersionStatus(version, "END", error=FAILED_TO_LOAD, cause=cause)


def test_failures_name_the_model_the_file_and_the_cause(tmp_path: Path) -> None:
    models = [served(tmp_path, "iris", {1: VersionStatus(1, "AVAILABLE")}, loaded=True),
              served(tmp_path, "loans", {1: failed(1, "XGBoostError: bad")}),
              ServedModel(ModelSpec(name="empty", base_path=str(tmp_path)))]
    found = failures(models)
    assert [str(f) for f in found] == [
        f"model 'loans' version 1 failed to load from {tmp_path / 'loans' / '1' / 'model.json'}:"
        " XGBoostError: bad",
        f"model 'empty' failed to load from {tmp_path}: no numbered version folder"]
    line = failure_line(found, others_loaded=True)
    assert line.startswith("flask_predict: not starting: model 'loans' version 1 failed")
    assert "; model 'empty' failed" in line and "\n" not in line
    assert line.endswith("(PREDICT_EXIT_ON_LOAD_ERROR=false serves the models that loaded)")


def test_the_rule_stops_or_serves_the_rest(tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    models = [served(tmp_path, "iris", {1: VersionStatus(1, "AVAILABLE")}, loaded=True),
              served(tmp_path, "loans", {1: failed(1, "XGBoostError: bad")})]
    check_first_load(models[:1], exit_on_error=True)  # all loaded: nothing to say
    with pytest.raises(StartFailed) as stopped:
        check_first_load(models, exit_on_error=True)
    assert stopped.value.message == failure_line(failures(models), others_loaded=True)
    with caplog.at_level(logging.ERROR, logger="flask_predict.models.startup"):
        check_first_load(models, exit_on_error=False)
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("flask_predict: model 'loans' version 1 failed to load from ")
    assert line.endswith("; serving the other models (PREDICT_EXIT_ON_LOAD_ERROR is false)")


def test_stop_is_the_owners(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    models = [served(tmp_path, "loans", {1: failed(1, "XGBoostError: bad")})]
    told: list[StartFailed] = []
    stop_with(told.append)  # a server: its own way to stop
    try:
        settle(models, exit_on_error=True)
    finally:
        stop_with(None)
    assert [error.message for error in told] == [failure_line(failures(models))]
    with caplog.at_level(logging.CRITICAL, logger="flask_predict.models.startup"):
        settle(models, exit_on_error=True)  # embedded: the app goes on, not ready
    [line] = [r.getMessage() for r in caplog.records]
    assert "model 'loans' version 1 failed to load" in line and "not ready" in line


def test_a_worker_respawned_after_the_start_says_what_failed_and_serves_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    from flask_predict.process import worker_hooks

    models = [served(tmp_path, "loans", {2: failed(2, "XGBoostError: bad")})]
    monkeypatch.setenv(worker_hooks.STATE_DIR_VARIABLE, str(tmp_path))
    (tmp_path / worker_hooks.STARTED).touch()  # the server started before this worker
    with caplog.at_level(logging.ERROR, logger="flask_predict.process.server"):
        worker_hooks.stop_starting_server(StartFailed(failures(models), False))  # no exit
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("flask_predict: model 'loans' version 2 failed to load from ")
    assert line.endswith("; this worker serves the others, as the server does")
    assert "not starting" not in line


def test_a_flat_folder_of_model_files_is_version_1(tmp_path: Path) -> None:
    (tmp_path / "iris" / "1").mkdir(parents=True)
    (tmp_path / "iris" / "1" / "model.joblib").write_bytes(b"")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "model.joblib").write_bytes(b"")
    for base in (tmp_path / "iris" / "1", tmp_path / "flat"):
        check_models([ModelSpec(name="m", base_path=str(base))])  # sklearn's file: detected
        assert version_folders(str(base)).keys() == {1}
        assert version_path(str(base), 1) == str(base)


def test_a_base_path_named_as_a_version_with_no_file_says_where_to_look(tmp_path: Path) -> None:
    (tmp_path / "iris" / "1" / "variables").mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        check_models([ModelSpec(name="m", base_path=str(tmp_path / "iris" / "1"))])
    assert "no numbered version folder" in info.value.message
    assert f"looks like a version folder: use its parent, '{tmp_path / 'iris'}'" in \
        info.value.message
