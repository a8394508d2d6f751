"""ModelRepository: loading, version policies, reloads that never lose the served version."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from flask_predict import ConfigError, ModelNotFound, ModelNotReady, Predictor
from flask_predict.models.plugins import load_predictor_class
from flask_predict.models.artifacts import tree_stamp, version_folders
from flask_predict.models.repository import ModelRepository
from flask_predict.models.served import FAILED_TO_LOAD
from flask_predict.core.startup import StartFailed
from flask_predict.types import ModelSpec, VersionPolicy
from tests import models


class ValuePredictor(Predictor):
    """Answers the number written in its folder's ``value.txt``; ``raise`` fails the load."""

    closed: ClassVar[list[tuple[str, int]]] = []
    loading: ClassVar[threading.Event | None] = None
    """When set by a test, ``from_path`` waits for it (to observe a load in progress)."""

    def __init__(self, value: float, path: str) -> None:
        self.value = value
        self.path = path

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> ValuePredictor:
        if cls.loading is not None:
            cls.loading.wait(10)
        text = (Path(model_dir) / "value.txt").read_text()
        if text == "raise":
            raise RuntimeError("this version is broken")
        return cls(float(text), model_dir)

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        return [self.value for _ in instances]

    def close(self) -> None:
        base, version = os.path.split(self.path)
        ValuePredictor.closed.append((os.path.basename(base), int(version)))


def lookup(name: str) -> type[Predictor]:
    return ValuePredictor if name == "value" else load_predictor_class(name)


@pytest.fixture(autouse=True)
def _reset() -> None:
    ValuePredictor.closed.clear()
    ValuePredictor.loading = None


def write_version(base: Path, version: int, value: str) -> None:
    """Write a version the way the docs ask: under a temporary name, then rename."""
    staging = base / f".{version}.tmp"
    staging.mkdir(parents=True)
    (staging / "value.txt").write_text(value)
    staging.rename(base / str(version))


def spec(base: Path, name: str = "m", **kwargs: Any) -> ModelSpec:
    return ModelSpec(name=name, base_path=str(base), predictor="value", **kwargs)


def answer(repository: ModelRepository, name: str = "m", **kwargs: Any) -> Any:
    return repository.get(name, **kwargs).predictor.predict([0])[0]


def test_new_version_replaces_old_and_unused_old_is_closed_at_once(tmp_path: Path) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    assert answer(repository) == 1.0
    write_version(tmp_path, 2, "2")
    repository.sync([spec(tmp_path)])
    assert answer(repository) == 2.0
    assert sorted(repository.model("m").versions) == [2]
    statuses = repository.model("m").statuses
    assert (statuses[1].state, statuses[2].state) == ("UNLOADING", "AVAILABLE")
    assert statuses[1].error == "" and statuses[2].error == ""
    # no request held version 1: it is closed as it leaves
    assert ValuePredictor.closed == [(tmp_path.name, 1)]
    with pytest.raises(ModelNotFound):
        repository.get("m", version=1)
    repository.sync([spec(tmp_path)])
    assert repository.model("m").statuses[1].state == "END"


def test_request_running_across_a_swap_finishes_on_its_version_then_it_closes(
        tmp_path: Path) -> None:
    from flask_predict.core.service import ModelService

    write_version(tmp_path, 1, "1")
    service = ModelService(ModelRepository.load([spec(tmp_path)], lookup))
    with service.use("m") as held:
        write_version(tmp_path, 2, "2")
        service.repository.sync([spec(tmp_path)])
        # the new version serves new requests; the running one keeps its own, open
        assert answer(service.repository) == 2.0
        assert ValuePredictor.closed == []
        assert held.version == 1 and not held.closed
        assert service.predict_instances(held, [0], {}) == [1.0]
    assert ValuePredictor.closed == [(tmp_path.name, 1)]
    assert held.closed and held.uses == 0


def test_a_retired_version_is_never_handed_out(tmp_path: Path) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    old = repository.get("m")
    write_version(tmp_path, 2, "2")
    repository.sync([spec(tmp_path)])
    assert not old.acquire()  # a request that looked it up just before the swap retries


def test_broken_version_keeps_the_served_one_and_is_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    write_version(tmp_path, 2, "raise")
    with caplog.at_level(logging.ERROR, logger="flask_predict.models.repository"):
        repository.sync([spec(tmp_path)])
        repository.sync([spec(tmp_path)])
    assert answer(repository) == 1.0
    failed = repository.model("m").statuses[2]
    assert failed.state == "END"
    assert failed.error == FAILED_TO_LOAD  # what a client reads; the cause is the log's
    assert failed.cause == "RuntimeError: this version is broken"
    assert repository.model("m").statuses[1].state == "AVAILABLE"
    [line] = [r.getMessage() for r in caplog.records if "version 2 failed" in r.getMessage()]
    assert line == (f"flask_predict: model 'm' version 2 failed to load from {tmp_path / '2'}: "
                    "RuntimeError: this version is broken (after 0.00s); the versions served "
                    "stay")
    assert repository.ready


def test_failed_version_is_tried_again_when_its_files_change(tmp_path: Path) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    write_version(tmp_path, 2, "raise")
    repository.sync([spec(tmp_path)])
    assert answer(repository) == 1.0
    value = tmp_path / "2" / "value.txt"
    value.write_text("2")
    stamp = time.time() + 5  # a new stamp even on a coarse-grained file system
    os.utime(value, (stamp, stamp))
    repository.sync([spec(tmp_path)])
    assert answer(repository) == 2.0
    assert repository.model("m").statuses[2].error == ""


def test_load_applies_the_start_up_rule(tmp_path: Path) -> None:
    write_version(tmp_path, 1, "raise")
    with pytest.raises(StartFailed) as failed:
        ModelRepository.load([spec(tmp_path)], lookup)
    assert failed.value.message == (
        f"flask_predict: not starting: model 'm' version 1 failed to load from "
        f"{tmp_path / '1'}: RuntimeError: this version is broken")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no numbered version folder"):
        ModelRepository.load([spec(tmp_path / "empty")], lookup)
    served = ModelRepository.load([spec(tmp_path)], lookup, exit_on_error=False)
    assert served.model("m").statuses[1].cause == "RuntimeError: this version is broken"


def test_a_flat_folder_is_version_1_until_a_numbered_one_appears(tmp_path: Path) -> None:
    (tmp_path / "value.txt").write_text("7")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    assert answer(repository) == 7.0
    assert repository.model("m").versions[1].path == str(tmp_path)
    write_version(tmp_path, 2, "2")
    repository.sync([spec(tmp_path)])
    assert answer(repository) == 2.0 and list(repository.model("m").versions) == [2]
    (tmp_path / ".hidden").mkdir()
    assert list(version_folders(str(tmp_path / ".hidden"))) == []


def test_only_numeric_folders_count(tmp_path: Path) -> None:
    (tmp_path / ".3.tmp").mkdir()
    (tmp_path / "3a").mkdir()
    (tmp_path / "4").write_text("a file, not a folder")
    write_version(tmp_path, 2, "2")
    assert list(version_folders(str(tmp_path))) == [2]


def test_version_policies_and_labels(tmp_path: Path) -> None:
    for version in (1, 2, 3):
        write_version(tmp_path, version, str(version))
    latest2 = spec(tmp_path, version_policy=VersionPolicy("latest", num_versions=2))
    repository = ModelRepository.load([latest2], lookup)
    assert sorted(repository.model("m").versions) == [2, 3]
    labelled = spec(tmp_path, labels={"stable": 1}, default_version="stable")
    repository.sync([labelled])
    assert sorted(repository.model("m").versions) == [1, 3]
    assert answer(repository) == 1.0
    assert answer(repository, label="stable") == 1.0
    assert answer(repository, version="3") == 3.0
    repository.sync([spec(tmp_path, version_policy=VersionPolicy("specific", versions=(2,)))])
    assert sorted(repository.model("m").versions) == [2]
    repository.sync([spec(tmp_path, version_policy=VersionPolicy("all"))])
    assert sorted(repository.model("m").versions) == [1, 2, 3]


def test_failed_newest_version_leaves_policy_to_loaded_ones(tmp_path: Path) -> None:
    for version in (1, 2):
        write_version(tmp_path, version, str(version))
    two = spec(tmp_path, version_policy=VersionPolicy("latest", num_versions=2))
    repository = ModelRepository.load([two], lookup)
    write_version(tmp_path, 3, "raise")
    repository.sync([two])
    assert sorted(repository.model("m").versions) == [1, 2]
    assert answer(repository) == 2.0


def test_version_removed_from_disk_is_unloaded(tmp_path: Path) -> None:
    for version in (1, 2):
        write_version(tmp_path, version, str(version))
    every = spec(tmp_path, version_policy=VersionPolicy("all"))
    repository = ModelRepository.load([every], lookup)
    (tmp_path / "2" / "value.txt").unlink()
    (tmp_path / "2").rmdir()
    repository.sync([every])
    assert sorted(repository.model("m").versions) == [1]
    assert 2 not in repository.model("m").statuses
    repository.sync([every])
    assert ValuePredictor.closed == [(tmp_path.name, 2)]


def test_emptied_base_path_keeps_serving(tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    (tmp_path / "1").rename(tmp_path / "old")
    with caplog.at_level(logging.WARNING, logger="flask_predict.models.repository"):
        repository.sync([spec(tmp_path)])
        repository.sync([spec(tmp_path)])
    assert answer(repository) == 1.0
    assert len([r for r in caplog.records if "stay served" in r.getMessage()]) == 1


def test_models_added_and_removed(tmp_path: Path) -> None:
    write_version(tmp_path / "a", 1, "1")
    write_version(tmp_path / "b", 1, "5")
    repository = ModelRepository.load([spec(tmp_path / "a", "a")], lookup)
    repository.sync([spec(tmp_path / "a", "a"), spec(tmp_path / "b", "b")])
    assert repository.names() == ["a", "b"]
    assert answer(repository, "b") == 5.0
    repository.sync([spec(tmp_path / "b", "b")])
    assert repository.names() == ["b"]
    with pytest.raises(ModelNotFound):
        repository.get("a")
    repository.sync([spec(tmp_path / "b", "b")])
    assert ValuePredictor.closed == [("a", 1)]


def test_new_base_path_for_a_model_replaces_its_versions(tmp_path: Path) -> None:
    write_version(tmp_path / "a", 1, "1")
    write_version(tmp_path / "b", 1, "7")
    repository = ModelRepository.load([spec(tmp_path / "a")], lookup)
    repository.sync([spec(tmp_path / "b")])
    assert answer(repository) == 7.0
    repository.sync([spec(tmp_path / "b")])
    assert ValuePredictor.closed == [("a", 1)]


def test_readiness(tmp_path: Path) -> None:
    write_version(tmp_path / "a", 1, "1")
    write_version(tmp_path / "broken", 1, "raise")
    repository = ModelRepository(lookup)
    assert not repository.ready
    repository.sync([spec(tmp_path / "a", "a")])
    assert repository.ready
    write_version(tmp_path / "a", 2, "2")
    repository.sync([spec(tmp_path / "a", "a")])
    assert repository.ready
    repository.sync([spec(tmp_path / "a", "a"), spec(tmp_path / "broken", "broken")])
    assert not repository.ready
    assert not repository.model("broken").ready
    with pytest.raises(ModelNotReady):
        repository.get("broken")
    assert "RuntimeError" in repository.model("broken").statuses[1].cause
    repository.serve_the_rest = True  # PREDICT_EXIT_ON_LOAD_ERROR false: the others serve
    assert repository.ready
    repository.sync([spec(tmp_path / "broken", "broken")])
    assert not repository.ready  # but not nothing at all

def test_loading_status_and_old_version_serve_during_a_load(tmp_path: Path) -> None:
    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    write_version(tmp_path, 2, "2")
    ValuePredictor.loading = threading.Event()
    loader = threading.Thread(target=repository.sync, args=([spec(tmp_path)],))
    loader.start()
    try:
        deadline = time.monotonic() + 10
        while repository.model("m").statuses.get(2) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert repository.model("m").statuses[2].state == "LOADING"
        assert answer(repository) == 1.0
        assert repository.ready
    finally:
        ValuePredictor.loading.set()
        loader.join(10)
    assert answer(repository) == 2.0


def test_requests_during_reloads_always_find_a_version(tmp_path: Path) -> None:
    from flask_predict.core.service import ModelService

    write_version(tmp_path, 1, "1")
    repository = ModelRepository.load([spec(tmp_path)], lookup)
    service = ModelService(repository)
    failures: list[BaseException] = []
    seen: set[float] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                # as every front end does: resolve once, hold the version while it runs
                with service.use("m") as loaded:
                    seen.add(service.predict_instances(loaded, [0], {})[0])
                    assert not loaded.closed
            except BaseException as exc:  # any failure is the bug this test looks for
                failures.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version in range(2, 12):
            write_version(tmp_path, version, str(version))
            repository.sync([spec(tmp_path)])
            time.sleep(0.05)  # the watcher's polls are apart; a version drains in between
    finally:
        stop.set()
        thread.join(10)
    assert failures == []
    assert answer(repository) == 11.0
    assert seen <= {float(v) for v in range(1, 12)}


def test_real_sklearn_versions(tmp_path: Path) -> None:
    base = models.train_iris(tmp_path / "iris")
    iris = ModelSpec(name="iris", base_path=str(base))  # plugin detected from the file
    repository = ModelRepository.load([iris], lookup)
    models.train_iris(base, version=2)
    repository.sync([iris])
    loaded = repository.get("iris")
    assert loaded.version == 2 and loaded.metadata.platform == "sklearn"
    (base / "3").mkdir()
    (base / "3" / "model.joblib").write_bytes(b"not a pickle")
    repository.sync([iris])
    assert repository.get("iris").version == 2
    assert "unreadable model file: cannot unpickle it" in repository.model("iris").statuses[3].cause
    features = np.asarray([[5.1, 3.5, 1.4, 0.2]])
    assert repository.get("iris").predictor.predict_tensors({"inputs": features})[
        "predict"].tolist() == [0]


def test_tree_stamp_sees_nested_writes(tmp_path: Path) -> None:
    nested = tmp_path / "variables"
    nested.mkdir()
    (nested / "data").write_text("x")
    before = tree_stamp(str(tmp_path))
    later = before + 10
    os.utime(nested / "data", (later, later))
    assert tree_stamp(str(tmp_path)) == later
    assert tree_stamp(str(tmp_path / "missing")) == 0.0


# --- which plugin a version folder needs ------------------------------------------------------

class _Evil:
    """Unpickling this would create a file: detection must never unpickle."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def _spec(**options: object) -> dict[str, object]:
    """A model's options, as detection sees them."""
    return options


@pytest.mark.parametrize("compress", [0, 3, ("gzip", 3), ("lzma", 3), ("bz2", 3)])
def test_detects_sklearn_and_xgboost_pickles(tmp_path: Path, compress: object) -> None:
    import joblib
    import xgboost as xgb
    from sklearn.linear_model import LinearRegression

    from flask_predict.models.plugins import detect_predictor

    (tmp_path / "sk").mkdir()
    joblib.dump(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]),
                tmp_path / "sk" / "model.joblib", compress=compress)
    assert detect_predictor(str(tmp_path / "sk"), _spec()) == "sklearn"
    (tmp_path / "xg").mkdir()
    joblib.dump(xgb.XGBRegressor(n_estimators=2).fit([[0.0], [1.0]], [0.0, 1.0]),
                tmp_path / "xg" / "model.joblib", compress=compress)
    assert detect_predictor(str(tmp_path / "xg"), _spec()) == "xgboost"


@pytest.mark.parametrize("files, expected", [
    (["saved_model.pb"], "tensorflow"),
    (["model.bst"], "xgboost"),
    (["model.json"], "xgboost"),
    (["model.ubj"], "xgboost"),
])
def test_detects_by_file_name(tmp_path: Path, files: list[str], expected: str) -> None:
    from flask_predict.models.plugins import detect_predictor

    for name in files:
        (tmp_path / name).write_bytes(b"")
    assert detect_predictor(str(tmp_path), _spec()) == expected


def test_detection_errors_and_custom(tmp_path: Path) -> None:
    from flask_predict.models.plugins import detect_predictor

    assert detect_predictor(str(tmp_path), _spec(**{"class": "p.C"})) == "custom"
    with pytest.raises(ConfigError, match="no installed plugin recognises"):
        detect_predictor(str(tmp_path), _spec())
    (tmp_path / "saved_model.pb").write_bytes(b"")
    (tmp_path / "model.bst").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"plugins \['tensorflow', 'xgboost'\] all claim"):
        detect_predictor(str(tmp_path), _spec())
    # a class in the settings wins over artifact files beside the code
    assert detect_predictor(str(tmp_path), _spec(**{"class": "p.C"})) == "custom"
    for name in ("saved_model.pb", "model.bst"):
        (tmp_path / name).unlink()
    (tmp_path / "model.pkl").write_bytes(b"")
    (tmp_path / "model.joblib").write_bytes(b"")
    with pytest.raises(ConfigError, match="several model files"):
        detect_predictor(str(tmp_path), _spec())


def test_detection_never_unpickles(tmp_path: Path) -> None:
    import pickle

    from flask_predict.models.artifacts import pickled_module
    from flask_predict.models.plugins import detect_predictor

    marker = tmp_path / "executed"
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(_Evil(str(marker))))
    assert pickled_module(str(tmp_path / "model.pkl")) in ("io", "builtins")
    assert detect_predictor(str(tmp_path), _spec()) == "sklearn"
    assert not marker.exists()
    (tmp_path / "model.pkl").write_bytes(b"garbage")
    with pytest.raises(ConfigError, match="unreadable model file: |no class reference"):
        pickled_module(str(tmp_path / "model.pkl"))
