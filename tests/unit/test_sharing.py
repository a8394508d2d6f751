"""sharing: which models the master loads, what it publishes for the workers it forks, and a
worker's repository serving what it inherited (the fork itself: tests/e2e/
test_shared_models_gunicorn.py)."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, ClassVar, Iterator

import pytest

from flask_predict import Predictor, sharing
from flask_predict.plugins import load_predictor_class, manifests
from flask_predict.repository import ModelRepository
from flask_predict.served import FAILED_TO_LOAD, Shelf
from flask_predict.sharing import MasterModels, Shareable
from flask_predict.types import ModelSpec
from tests import models


class CountingPredictor(Predictor):
    """Answers the number in its folder's ``value.txt``; counts loads, warm-ups, forks and
    closes, so a test sees which process did what."""

    events: ClassVar[list[str]] = []

    def __init__(self, value: float) -> None:
        self.value = value

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> CountingPredictor:
        cls.events.append("load")
        return cls(float((Path(model_dir) / "value.txt").read_text()))

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        CountingPredictor.events.append("predict")
        return [self.value for _ in instances]

    def after_fork(self) -> None:
        CountingPredictor.events.append("after_fork")

    def close(self) -> None:
        CountingPredictor.events.append("close")


def lookup(name: str) -> type[Predictor]:
    return CountingPredictor if name == "counting" else load_predictor_class(name)


def write_version(base: Path, version: int, value: float, warmup: bool = True) -> None:
    folder = base / str(version)
    (folder / "assets.extra").mkdir(parents=True)
    (folder / "value.txt").write_text(str(value))
    if warmup:
        (folder / "assets.extra" / "warmup_requests.json").write_text(
            json.dumps([{"instances": [[1.0]]}]))


def spec(base: Path, name: str = "m") -> ModelSpec:
    return ModelSpec(name=name, base_path=str(base), predictor="counting")


@pytest.fixture(autouse=True)
def _reset(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    CountingPredictor.events.clear()
    monkeypatch.setattr(sharing, "_shelf", None)
    yield


def master_shelf(*specs: ModelSpec) -> Shelf:
    """What a master that loaded *specs* (every one shared) hands its forks."""
    repository = ModelRepository(lookup, warm=False)
    repository.sync(specs)
    repository.sync(specs)  # a second poll (a newest version that failed leaves the older)
    held = {served.name: served for served in repository.models()}
    return Shelf(held, lambda s: True, 1)


def test_the_plugins_manifests_decide_which_models_are_shared(tmp_path: Path) -> None:
    shareable = Shareable()
    iris = models.train_iris(tmp_path / "iris")
    assert shareable(ModelSpec("iris", str(iris)))  # detected: scikit-learn
    assert shareable(ModelSpec("iris", str(iris), predictor="sklearn"))
    custom = models.make_custom(tmp_path / "echo")
    options = {"class": "predictor.EchoPredictor"}
    assert not shareable(ModelSpec("echo", str(custom), predictor="custom", options=options))
    assert shareable(ModelSpec("echo2", str(custom), predictor="custom",
                               options={**options, "shared": True}))
    (tmp_path / "tf" / "1").mkdir(parents=True)
    (tmp_path / "tf" / "1" / "saved_model.pb").write_bytes(b"")
    assert not shareable(ModelSpec("tf", str(tmp_path / "tf")))
    assert "tensorflow" in manifests() and not manifests()["tensorflow"].shares({})


def test_undecided_until_a_version_folder_appears(tmp_path: Path) -> None:
    shareable = Shareable()
    model = ModelSpec("late", str(tmp_path / "late"))
    assert not shareable(model)
    models.train_iris(tmp_path / "late")
    assert shareable(model)


def test_the_master_loads_without_warming_up_and_publishes_each_change(tmp_path: Path) -> None:
    write_version(tmp_path / "m", 1, 1.0)
    found = {"counting": manifests()["sklearn"]}  # a manifest that says shared
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found))
    master.repository = ModelRepository(lookup, warm=False)  # CountingPredictor's loader
    master.watcher.repository = master.repository
    master.load()
    assert CountingPredictor.events == ["load"], "the master never predicts"
    shelf = sharing.inherited()
    assert shelf is not None and shelf.generation == 1
    assert sorted(shelf.models["m"].versions) == [1]
    assert not master.publish(), "nothing changed"
    write_version(tmp_path / "m", 2, 2.0)
    master.watcher.poll()
    assert master.publish()
    shelf = sharing.inherited()
    assert shelf is not None and shelf.generation == 2
    assert sorted(shelf.models["m"].versions) == [2]
    assert CountingPredictor.events == ["load", "load", "close"]


def test_a_worker_serves_the_masters_predictor_warms_it_up_and_never_closes_it(
        tmp_path: Path) -> None:
    write_version(tmp_path / "m", 1, 1.0)
    shelf = master_shelf(spec(tmp_path / "m"))
    theirs = shelf.models["m"].versions[1].predictor
    CountingPredictor.events.clear()
    worker = ModelRepository(lookup, shelf=shelf)
    worker.sync([spec(tmp_path / "m")])
    with worker.get("m") as loaded:
        assert loaded.predictor is theirs and not loaded.owned
        assert loaded.predictor.predict([[0.0]]) == [1.0]
    assert worker.ready
    assert CountingPredictor.events[:2] == ["after_fork", "predict"], "set up, warmed up here"
    worker.sync([spec(tmp_path / "m")])  # later polls change nothing
    assert CountingPredictor.events.count("after_fork") == 1
    worker.sync([])  # removed from the configuration: retired, but the master's to close
    worker.close()
    assert "close" not in CountingPredictor.events and "load" not in CountingPredictor.events


def test_a_new_version_on_disk_waits_for_the_master(tmp_path: Path) -> None:
    """A worker never loads a shared model: a version the master has not loaded yet (or a
    model it does not hold) reaches a worker forked after it has."""
    write_version(tmp_path / "m", 1, 1.0)
    shelf = master_shelf(spec(tmp_path / "m"))
    CountingPredictor.events.clear()
    worker = ModelRepository(lookup, shelf=shelf)
    write_version(tmp_path / "m", 2, 2.0)
    write_version(tmp_path / "new", 1, 3.0)
    worker.sync([spec(tmp_path / "m"), spec(tmp_path / "new", "new")])
    assert sorted(worker.model("m").versions) == [1]
    assert not worker.model("new").versions and not worker.ready
    assert "load" not in CountingPredictor.events


def test_a_failure_in_the_master_is_each_workers_status_and_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path / "m", 1, 1.0)
    (tmp_path / "m" / "2").mkdir()
    (tmp_path / "m" / "2" / "value.txt").write_text("not a number")
    # the master's first load leaves the failure to the start-up rule (one line, or
    # with PREDICT_EXIT_ON_LOAD_ERROR false one line per failure): its own line is DEBUG
    with caplog.at_level(logging.DEBUG, logger="flask_predict.repository"):
        shelf = master_shelf(spec(tmp_path / "m"))
        assert "version 2: not loaded in the master" in caplog.text
        assert "version 2 failed to load" not in caplog.text
        worker = ModelRepository(lookup, shelf=shelf)
        worker.sync([spec(tmp_path / "m")])
        worker.sync([spec(tmp_path / "m")])
    served = worker.model("m")
    assert sorted(served.versions) == [1] and served.statuses[2].state == "END"
    assert caplog.text.count("model 'm' version 2 failed to load") == 1


def test_forks_wait_for_a_load_in_progress(tmp_path: Path) -> None:
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    found = {"counting": manifests()["sklearn"]}
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found))
    master.repository.lock.acquire()  # a load in progress on the watcher's thread
    forked = threading.Event()

    def fork() -> None:
        master._before_fork()  # what os.fork runs first (os.register_at_fork)
        forked.set()
        master._after_fork()

    thread = threading.Thread(target=fork)
    thread.start()
    assert not forked.wait(0.3), "the fork waits"
    master.repository.lock.release()
    assert forked.wait(5)
    thread.join(5)
    assert not master.repository.lock.locked()
    assert os.getpid() == master._pid


def test_a_failure_after_the_fork_reaches_the_workers_without_replacing_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    found = {"counting": manifests()["sklearn"]}
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found),
                          state_dir=str(tmp_path))
    master.repository = ModelRepository(lookup, warm=False)
    master.watcher.repository = master.repository
    master.load()
    shelf = sharing.inherited()  # what a worker forked now inherits
    assert shelf is not None
    worker = ModelRepository(lookup, shelf=shelf)
    worker.sync([spec(tmp_path / "m")])
    (tmp_path / "m" / "2").mkdir()
    (tmp_path / "m" / "2" / "value.txt").write_text("not a number")
    master.watcher.poll()
    assert not master.publish(), "nothing served changed: no worker is replaced"
    with caplog.at_level(logging.ERROR, logger="flask_predict.repository"):
        worker.sync([spec(tmp_path / "m")])
        worker.sync([spec(tmp_path / "m")])
    served = worker.model("m")
    assert sorted(served.versions) == [1] and served.statuses[2].state == "END"
    assert served.statuses[2].error == FAILED_TO_LOAD  # what clients read
    assert "not a number" in served.statuses[2].cause  # what the log says
    assert caplog.text.count("model 'm' version 2 failed to load") == 1
