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

from flask_predict import Predictor
from flask_predict.models import sharing
from flask_predict.models.plugins import load_predictor_class, manifests
from flask_predict.models.repository import ModelRepository
from flask_predict.models.served import FAILED_TO_LOAD, Shelf
from flask_predict.models.shareable import Shareable
from flask_predict.models.sharing import MasterModels
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
    return Shelf(held, lambda s, v: True, 1)


def test_the_plugins_manifests_decide_which_models_are_shared(tmp_path: Path) -> None:
    shareable = Shareable()
    iris = models.train_iris(tmp_path / "iris")
    assert shareable(ModelSpec("iris", str(iris)), 1)  # detected: scikit-learn
    assert shareable(ModelSpec("iris", str(iris), predictor="sklearn"), 1)
    custom = models.make_custom(tmp_path / "echo")
    options = {"class": "predictor.EchoPredictor"}
    assert not shareable(ModelSpec("echo", str(custom), predictor="custom", options=options), 1)
    assert shareable(ModelSpec("echo2", str(custom), predictor="custom",
                               options={**options, "shared": True}), 1)
    (tmp_path / "tf" / "1").mkdir(parents=True)
    (tmp_path / "tf" / "1" / "saved_model.pb").write_bytes(b"")
    assert not shareable(ModelSpec("tf", str(tmp_path / "tf")), 1)
    assert "tensorflow" in manifests() and not manifests()["tensorflow"].shares({})


def test_decided_per_version_folder(tmp_path: Path) -> None:
    """Version 1 in scikit-learn, version 2 a TensorFlow SavedModel (as TF Serving expects
    versions to arrive): only version 1 is the master's."""
    shareable = Shareable()
    model = ModelSpec("mixed", str(tmp_path / "mixed"))
    assert not shareable(model, 1) and not shareable.any_version(model)
    models.train_iris(tmp_path / "mixed")
    (tmp_path / "mixed" / "2").mkdir()
    (tmp_path / "mixed" / "2" / "saved_model.pb").write_bytes(b"")
    assert shareable(model, 1) and not shareable(model, 2)
    assert shareable.any_version(model)
    shareable.decline(model, 1)
    assert not shareable(model, 1), "a declined version loads in each worker"


def test_the_master_loads_only_the_shared_versions(tmp_path: Path) -> None:
    """The master never loads (nor imports the framework of) a version it does not share;
    the one it shares leaves once the policy's newest is the workers' own; a worker loads
    that one itself."""
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    model = spec(tmp_path / "m")
    found = {"counting": manifests()["sklearn"]}
    shareable = Shareable(found)
    master = MasterModels((model,), None, None, 0.0, shareable, lookup=lookup)
    master.load()
    assert sorted(master.repository.model("m").versions) == [1]
    write_version(tmp_path / "m", 2, 2.0, warmup=False)
    shareable.decline(model, 2)  # as a version in another framework is
    master.watcher.poll()
    assert sorted(master.repository.model("m").versions) == [1], "the workers' fallback"
    master.publish()
    assert CountingPredictor.events == ["load"]
    shelf = sharing.inherited()
    assert shelf is not None
    worker = ModelRepository(lookup, shelf=shelf)
    worker.sync([model])
    with worker.get("m") as loaded:
        assert loaded.version == 2 and loaded.owned, "loaded by the worker itself"
        assert loaded.predictor.predict([[0.0]]) == [2.0]
    (tmp_path / "m" / "2" / "value.txt").write_text("broken")  # version 2 fails to load
    fresh = ModelRepository(lookup, shelf=shelf)
    fresh.sync([model])
    fresh.sync([model])  # the next poll falls back to what the master holds
    with fresh.get("m") as loaded:
        assert loaded.version == 1 and not loaded.owned


def test_the_master_loads_without_warming_up_and_publishes_each_change(tmp_path: Path) -> None:
    write_version(tmp_path / "m", 1, 1.0)
    found = {"counting": manifests()["sklearn"]}  # a manifest that says shared
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found),
                          lookup=lookup)
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
    assert CountingPredictor.events == ["load", "load"], "closed once no worker holds it"


class Worker:
    """What the master knows of a gunicorn worker: the generation it inherited."""


def test_a_dropped_version_closes_after_the_last_worker_that_may_hold_it(
        tmp_path: Path) -> None:
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    found = {"counting": manifests()["sklearn"]}
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found),
                          lookup=lookup)
    master.load()
    old = Worker()
    master.forking(old)
    master._before_fork()  # what os.fork runs (os.register_at_fork)
    master._after_fork()
    assert getattr(old, sharing.GENERATION_ATTRIBUTE) == 1
    write_version(tmp_path / "m", 2, 2.0, warmup=False)
    master.watcher.poll()
    assert master.publish()
    new = Worker()
    setattr(new, sharing.GENERATION_ATTRIBUTE, 2)
    master.close_due([old, new])
    assert "close" not in CountingPredictor.events, "the old worker may still serve it"
    master.close_due([new])  # the old worker exited
    for _ in range(100):
        if "close" in CountingPredictor.events:
            break
        threading.Event().wait(0.05)
    assert CountingPredictor.events == ["load", "load", "close"]
    master.close_all()  # the master exits: version 2 too, and version 1 only once
    assert CountingPredictor.events == ["load", "load", "close", "close"]


class ThreadedPredictor(CountingPredictor):
    """Starts a thread in ``from_path``: no fork keeps it running."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> CountingPredictor:
        predictor = super().from_path(model_dir)
        stop = threading.Event()
        predictor.stop = stop  # type: ignore[attr-defined]
        threading.Thread(target=stop.wait, name="user-thread", daemon=True).start()
        return predictor

    def close(self) -> None:
        self.stop.set()  # type: ignore[attr-defined]
        super().close()


def test_a_predictor_that_leaves_a_thread_loads_in_each_worker(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    model = spec(tmp_path / "m")
    shareable = Shareable({"counting": manifests()["sklearn"]})
    master = MasterModels((model,), None, None, 0.0, shareable,
                          lookup=lambda name: ThreadedPredictor)
    with caplog.at_level(logging.WARNING, logger="flask_predict.models.sharing"):
        master.load()
    assert "model 'm' version 1 left user-thread open" in caplog.text
    assert caplog.text.count("loads in each worker instead") == 1
    assert CountingPredictor.events == ["load", "close"]
    assert not master.repository.model("m").versions and not shareable(model, 1)
    assert not master.repository.model("m").statuses, "not a failure"
    worker = ModelRepository(lookup, shelf=sharing.inherited())
    worker.sync([model])
    with worker.get("m") as loaded:
        assert loaded.owned


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
    with caplog.at_level(logging.DEBUG, logger="flask_predict.models.repository"):
        shelf = master_shelf(spec(tmp_path / "m"))
        assert "version 2: not loaded in the master" in caplog.text
        assert "version 2 failed to load" not in caplog.text
        worker = ModelRepository(lookup, shelf=shelf)
        worker.sync([spec(tmp_path / "m")])
        worker.sync([spec(tmp_path / "m")])
    served = worker.model("m")
    assert sorted(served.versions) == [1] and served.statuses[2].state == "END"
    assert caplog.text.count("model 'm' version 2 failed to load") == 1


def test_forks_never_wait_for_a_load(tmp_path: Path) -> None:
    """A load of any length runs beside the arbiter: a fork waits only while a framework is
    imported or a new set is published."""
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    found = {"counting": manifests()["sklearn"]}
    loading, release = threading.Event(), threading.Event()

    class SlowPredictor(CountingPredictor):
        @classmethod
        def from_path(cls, model_dir: str, **options: Any) -> CountingPredictor:
            loading.set()
            release.wait(10)
            return super().from_path(model_dir)

    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found),
                          lookup=lambda name: SlowPredictor)
    thread = threading.Thread(target=master.load)
    thread.start()
    assert loading.wait(10)
    forked = threading.Event()

    def fork() -> None:
        master._before_fork()  # what os.fork runs first (os.register_at_fork)
        forked.set()
        master._after_fork()

    threading.Thread(target=fork).start()
    assert forked.wait(5), "the fork did not wait for the load"
    release.set()
    thread.join(10)
    assert os.getpid() == master._pid
    assert sharing.inherited() is not None


def test_a_failure_after_the_fork_reaches_the_workers_without_replacing_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path / "m", 1, 1.0, warmup=False)
    found = {"counting": manifests()["sklearn"]}
    master = MasterModels((spec(tmp_path / "m"),), None, None, 0.0, Shareable(found),
                          state_dir=str(tmp_path), lookup=lookup)
    master.load()
    shelf = sharing.inherited()  # what a worker forked now inherits
    assert shelf is not None
    worker = ModelRepository(lookup, shelf=shelf)
    worker.sync([spec(tmp_path / "m")])
    (tmp_path / "m" / "2").mkdir()
    (tmp_path / "m" / "2" / "value.txt").write_text("not a number")
    master.watcher.poll()
    assert not master.publish(), "nothing served changed: no worker is replaced"
    with caplog.at_level(logging.ERROR, logger="flask_predict.models.repository"):
        worker.sync([spec(tmp_path / "m")])
        worker.sync([spec(tmp_path / "m")])
    served = worker.model("m")
    assert sorted(served.versions) == [1] and served.statuses[2].state == "END"
    assert served.statuses[2].error == FAILED_TO_LOAD  # what clients read
    assert "not a number" in served.statuses[2].cause  # what the log says
    assert caplog.text.count("model 'm' version 2 failed to load") == 1
