"""The per-worker watcher: config file and version folders re-read while serving."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from flask import Flask

from flask_predict import FlaskPredict, close_app
from flask_predict.settings.model_config import load_models
from flask_predict.models.repository import ModelRepository
from flask_predict.models.watcher import Watcher
from tests import models


def write_config(path: Path, entries: dict[str, Any]) -> None:
    """Replace the config file atomically, as an editor or a deployment tool would."""
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(entries))
    staging.replace(path)


def echo(base: Path) -> dict[str, Any]:
    return {"base_path": str(base), "predictor": "custom", "class": "predictor.EchoPredictor"}


def scaled(repository: ModelRepository, name: str) -> Any:
    return repository.get(name).predictor.predict([1])[0]["scaled"]


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture()
def config_file(tmp_path: Path) -> Path:
    models.make_custom(tmp_path / "a", scale=2)
    models.make_custom(tmp_path / "b", scale=5)
    path = tmp_path / "models.json"
    write_config(path, {"a": echo(tmp_path / "a")})
    return path


def make_watcher(config_file: Path) -> Watcher:
    specs = load_models(None, config_file)
    repository = ModelRepository.load(specs, FlaskPredict().predictor_class)
    return Watcher(repository, None, str(config_file), 0.05, specs)


def test_config_file_edits_add_and_remove_models(config_file: Path, tmp_path: Path) -> None:
    watcher = make_watcher(config_file)
    write_config(config_file, {"a": echo(tmp_path / "a"), "b": echo(tmp_path / "b")})
    watcher.poll()
    assert watcher.repository.names() == ["a", "b"]
    assert scaled(watcher.repository, "b") == 5
    write_config(config_file, {"b": echo(tmp_path / "b")})
    watcher.poll()
    assert watcher.repository.names() == ["b"]


def test_broken_config_keeps_models_and_is_logged_once(
        config_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    watcher = make_watcher(config_file)
    config_file.write_text('{"a": {"base_path": ')  # half-written
    with caplog.at_level(logging.INFO, logger="flask_predict.models.watcher"):
        watcher.poll()
        watcher.poll()
        assert scaled(watcher.repository, "a") == 2
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1 and "not valid JSON" in errors[0].getMessage()
        # a model whose folder does not exist rejects the whole file, too
        write_config(config_file, {"a": echo(tmp_path / "a"), "c": echo(tmp_path / "nope")})
        watcher.poll()
        assert watcher.repository.names() == ["a"]
        assert "is not a directory" in caplog.records[-1].getMessage()
        write_config(config_file, {"a": echo(tmp_path / "a"), "b": echo(tmp_path / "b")})
        watcher.poll()
        assert watcher.repository.names() == ["a", "b"]
        assert "readable again" in caplog.records[-1].getMessage()


def test_new_version_served_by_the_thread(config_file: Path, tmp_path: Path) -> None:
    watcher = make_watcher(config_file)
    watcher.start()
    try:
        assert watcher.running
        models.make_custom(tmp_path / "staging", version=2, scale=7)
        (tmp_path / "staging" / "2").rename(tmp_path / "a" / "2")
        assert wait_for(lambda: scaled(watcher.repository, "a") == 7)
        assert watcher.repository.get("a").version == 2
    finally:
        watcher.stop()
    assert not watcher.running


def test_a_load_that_raises_leaves_the_thread_alive(config_file: Path, tmp_path: Path) -> None:
    watcher = make_watcher(config_file)
    watcher.start()
    try:
        broken = tmp_path / "a" / "2"
        broken.mkdir()
        (broken / "predictor.py").write_text("raise ImportError('broken on purpose')\n")
        assert wait_for(lambda: 2 in watcher.repository.model("a").statuses
                        and bool(watcher.repository.model("a").statuses[2].error))
        assert scaled(watcher.repository, "a") == 2
        models.make_custom(tmp_path / "a", version=3, scale=9)
        assert wait_for(lambda: scaled(watcher.repository, "a") == 9)
        assert watcher.running
    finally:
        watcher.stop()


def test_init_app_starts_and_close_app_stops_the_watcher(config_file: Path) -> None:
    app = Flask("watched")
    app.config.update(PREDICT_MODEL_CONFIG_FILE=str(config_file), PREDICT_POLL_SECONDS=0.05)
    FlaskPredict(app)
    watcher = app.extensions["predict"].service.control.watcher
    assert watcher is not None and watcher.running
    assert any(t.name == "flask-predict-watcher" for t in threading.enumerate())
    close_app(app)
    assert not watcher.running


def test_no_watcher_when_polling_is_off(config_file: Path) -> None:
    app = Flask("unwatched")
    app.config.update(PREDICT_MODEL_CONFIG_FILE=str(config_file), PREDICT_POLL_SECONDS=0)
    FlaskPredict(app)
    assert app.extensions["predict"].service.control.watcher is None
    close_app(app)


def test_predict_models_without_file_still_picks_up_versions(tmp_path: Path) -> None:
    models.make_custom(tmp_path / "a", scale=2)
    app = Flask("watched_models")
    app.config.update(PREDICT_MODELS={"a": echo(tmp_path / "a")}, PREDICT_POLL_SECONDS=0.05)
    FlaskPredict(app)
    state = app.extensions["predict"]
    try:
        models.make_custom(tmp_path / "a", version=2, scale=3)
        assert wait_for(lambda: scaled(state.service.repository, "a") == 3)
        response = app.test_client().post("/v1/projects/p/models/a:predict",
                                          json={"instances": [2]})
        assert response.get_json()["predictions"][0]["scaled"] == 6
    finally:
        close_app(app)


def test_poll_now_wakes_the_thread_and_unloaded_names_are_left_out(tmp_path: Path) -> None:
    """A poll asked for is done at once (the interval here is an hour), and its models
    leave out the names of the shared "unloaded" set."""
    from flask_predict.models.shared_state import StateDir

    config = {"a": echo(models.make_custom(tmp_path / "a")),
              "b": echo(models.make_custom(tmp_path / "b"))}
    specs = load_models(config, None)
    repository = ModelRepository.load(specs, FlaskPredict().predictor_class)
    unloaded = StateDir(tmp_path / "state").names("unloaded")
    watcher = Watcher(repository, specs, None, 3600, specs, unloaded=unloaded)
    watcher.start()
    try:
        unloaded.add("a")
        assert watcher.poll_now(30)
        assert repository.names() == ["b"] and repository.ready
        unloaded.discard("a")
        assert watcher.poll_now(30)
        assert repository.names() == ["a", "b"]
        assert [spec.name for spec in watcher.specs] == ["a", "b"]  # the configuration
    finally:
        watcher.stop()
        repository.close()
    assert not watcher.running
    unloaded.add("b")
    assert watcher.poll_now(30)  # no thread: polls in the caller
    assert repository.names() == ["a"]


def test_a_callback_added_while_the_first_load_ends_still_runs(config_file: Path) -> None:
    """Polling off (``PREDICT_POLL_SECONDS`` 0, TF Serving's
    ``--file_system_poll_wait_seconds 0``): a callback added after the first poll has called
    its callbacks but before the first load is declared done runs once that load is done.
    A worker adds its readiness marker so; missed, the server never read ready."""
    specs = load_models(None, config_file)
    repository = ModelRepository.load(specs, FlaskPredict().predictor_class)
    watcher = Watcher(repository, None, str(config_file), 0, specs, load_first=True)
    late = threading.Event()
    first_load = threading.Event()

    def added_during_the_poll() -> None:
        # runs in the first poll's callbacks, before the first load is declared done
        watcher.after_each_poll(late.set)
        watcher.after_first_load(first_load.set)

    watcher.after_each_poll(added_during_the_poll)
    watcher.start()
    try:
        assert watcher.wait_first_load(10)
        assert late.wait(10) and first_load.wait(10)
    finally:
        watcher.stop()
        repository.close()


def test_a_poll_reads_the_config_file_again_and_never_predict_models(
        config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PREDICT_MODELS is parsed once, with the settings (a running process's environment
    does not change); each poll reads only the config file, as it is now."""
    from flask_predict.settings import model_config
    from flask_predict.settings.app import read_settings

    models.make_custom(tmp_path / "c", scale=3)
    settings = read_settings({"PREDICT_MODELS": {"c": echo(tmp_path / "c")},
                              "PREDICT_MODEL_CONFIG_FILE": str(config_file)})
    assert [spec.name for spec in settings.environment_models] == ["c"]
    assert [spec.name for spec in settings.models] == ["c", "a"]
    repository = ModelRepository.load(settings.models, FlaskPredict().predictor_class)
    watcher = Watcher(repository, settings.environment_models, str(config_file), 0,
                      settings.models)
    parsed: list[str] = []
    real = model_config.parse_models

    def recorded(entries: Any, base_dir: Path | None, origin: str) -> Any:
        parsed.append(origin)
        return real(entries, base_dir, origin)

    monkeypatch.setattr(model_config, "parse_models", recorded)
    write_config(config_file, {"a": echo(tmp_path / "a"), "b": echo(tmp_path / "b")})
    watcher.poll()
    assert repository.names() == ["a", "b", "c"] and scaled(repository, "b") == 5.0
    assert parsed and all(origin.startswith("model config file") for origin in parsed)
