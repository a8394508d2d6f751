"""The lazy tier: first use loads, the least recently used leave under the cap, one load per
model at a time, failures answered through a back-off, names kept inside the root."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict.errors import FailedPrecondition, ModelNotFound, ModelTooLarge
from flask_predict.models.added_models import valid_name
from flask_predict.models.lazy import LazyTier
from flask_predict.models.plugins import load_predictor_class
from flask_predict.models.repository import ModelRepository
from flask_predict.models.shared_state import StateDir
from flask_predict.settings.lazy import LazySettings
from flask_predict.storage.artifacts import files_bytes
from flask_predict.types import ModelSpec
from tests.lazy_models import linear_answer, train_booster, train_linear

ROW = [1.0, 2.0, 3.0]


def no_growth() -> int:
    """Resident memory that never grows: each model then weighs its files, exactly."""
    return 0


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    for seed in range(1, 7):
        train_linear(tmp_path / f"m{seed}", seed)
    return tmp_path


def one_size(root: Path) -> int:
    sizes = {files_bytes(str(root / f"m{seed}" / "1")) for seed in range(1, 7)}
    assert len(sizes) == 1
    return sizes.pop()


def tier(root: Path, models: int = 3, retry_seconds: float = 30.0, **options: Any
         ) -> LazyTier:
    return LazyTier(LazySettings(str(root), models * one_size(root), retry_seconds),
                    load_predictor_class, measure=no_growth, **options)


def answer(tier: LazyTier, name: str) -> float:
    loaded = tier.model(name).default()
    outputs = loaded.predictor.predict_tensors({"input-0": np.array([ROW])})
    return float(next(iter(outputs.values()))[0])


def held_at(folder: str, started: threading.Event, release: threading.Event) -> Any:
    """The scikit-learn plugin, whose load of *folder* sets *started* and waits for
    *release*."""
    base = load_predictor_class("sklearn")

    class Held(base):  # type: ignore[misc, valid-type]
        @classmethod
        def from_path(cls, model_dir: str, **options: Any) -> Any:
            if model_dir.endswith(folder):
                started.set()
                release.wait(10)
            return base.from_path(model_dir, **options)

    return Held


def test_first_use_loads_and_answers_each_models_own(root: Path) -> None:
    lazy = tier(root, models=6)
    for seed in range(1, 7):
        assert answer(lazy, f"m{seed}") == linear_answer(seed, ROW)
    assert lazy.loads == 6
    answer(lazy, "m1")
    assert lazy.loads == 6  # a hit


def test_least_recently_used_leave_under_the_cap(root: Path) -> None:
    lazy = tier(root, models=3)
    for name in ["m1", "m2", "m3"]:
        answer(lazy, name)
    answer(lazy, "m1")  # m2 is now the least recently used
    old = lazy.find("m2")
    assert old is not None
    answer(lazy, "m4")
    assert [name for name, _ in lazy.held()] == ["m3", "m1", "m4"]
    assert lazy.held_bytes <= lazy.max_bytes
    assert old.default().closed  # evicted and unused: closed at once
    assert answer(lazy, "m2") == linear_answer(2, ROW)  # loaded again
    assert [name for name, _ in lazy.held()] == ["m1", "m4", "m2"]


def test_an_evicted_version_closes_after_its_last_request(root: Path) -> None:
    lazy = tier(root, models=1)
    held = lazy.model("m1").default()
    assert held.acquire()
    answer(lazy, "m2")
    assert not held.closed
    held.release()
    assert held.closed


def test_a_model_bigger_than_the_cap_is_refused(root: Path) -> None:
    lazy = LazyTier(LazySettings(str(root), one_size(root) - 1, 30.0), load_predictor_class,
                    measure=no_growth)
    with pytest.raises(ModelTooLarge, match="PREDICT_LAZY_MAX_BYTES"):
        lazy.model("m1")
    assert lazy.held() == []


def test_a_growth_past_the_cap_is_measured_again_before_a_refusal(root: Path) -> None:
    """A load's first reading can hold the heap growing back after a trim (a scrape's):
    one past the cap is loaded and measured once more, and the smaller reading counts."""
    readings = iter([0, 10**9, 0, 0])  # before and after the first load, then the second
    lazy = LazyTier(LazySettings(str(root), 3 * one_size(root), 30.0), load_predictor_class,
                    measure=lambda: next(readings))
    assert answer(lazy, "m1") == linear_answer(1, ROW)
    assert lazy.held() == [("m1", one_size(root))]
    growing = iter([0, 10**9, 0, 10**9])  # a model that really is that large: refused
    big = LazyTier(LazySettings(str(root), 3 * one_size(root), 30.0), load_predictor_class,
                   measure=lambda: next(growing, 0))
    with pytest.raises(ModelTooLarge, match="needs 1000000000 bytes"):
        big.model("m2")
    assert big.held() == []


def test_configured_models_stay_pinned(root: Path, tmp_path_factory: pytest.TempPathFactory
                                       ) -> None:
    pinned = train_linear(tmp_path_factory.mktemp("pinned") / "m1", 9)
    repository = ModelRepository(load_predictor_class)
    repository.sync([ModelSpec("m1", str(pinned))])
    repository.lazy = tier(root, models=1)
    for seed in range(2, 7):
        repository.model(f"m{seed}")
    assert [name for name, _ in repository.lazy.held()] == ["m6"]
    configured = repository.get("m1")  # the configured model wins over the root's m1
    outputs = configured.predictor.predict_tensors({"input-0": np.array([ROW])})
    assert float(next(iter(outputs.values()))[0]) == linear_answer(9, ROW)
    assert not configured.closed


def test_concurrent_first_requests_make_one_load(root: Path) -> None:
    base = load_predictor_class("sklearn")
    loads: list[float] = []

    class Counted(base):  # type: ignore[misc, valid-type]
        @classmethod
        def from_path(cls, model_dir: str, **options: Any) -> Any:
            loads.append(time.monotonic())
            time.sleep(0.3)
            return base.from_path(model_dir, **options)

    lazy = LazyTier(LazySettings(str(root), 10**9, 30.0), lambda name: Counted,
                    measure=no_growth)
    answer(lazy, "m1")  # a plugin's first load in a process is made twice (its one-time costs)
    assert len(loads) == 2
    loads.clear()
    answers: list[float] = []
    start = threading.Barrier(8)

    def first() -> None:
        start.wait()
        answers.append(answer(lazy, "m3"))

    threads = [threading.Thread(target=first) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert answers == [linear_answer(3, ROW)] * 8


def test_a_failed_load_answers_until_its_back_off_ends(root: Path) -> None:
    broken = root / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "model.joblib").write_bytes(b"not a pickle at all\n" * 4)
    now = [100.0]
    events: list[str] = []
    lazy = tier(root, retry_seconds=30, clock=lambda: now[0],
                listener=lambda event, *_: events.append(event))
    with pytest.raises(FailedPrecondition, match="'broken' failed to load"):
        lazy.model("broken")
    now[0] += 29
    with pytest.raises(FailedPrecondition, match="'broken' failed to load"):
        lazy.model("broken")
    assert events == ["failed"]  # answered from the back-off, not loaded again
    (broken / "model.joblib").unlink()
    train_linear(root / "fixed", 5)
    (root / "fixed" / "1" / "model.joblib").rename(broken / "model.joblib")
    now[0] += 2
    assert answer(lazy, "broken") == linear_answer(5, ROW)
    assert events == ["failed", "loaded"]


@pytest.mark.parametrize("name", ["", "..", ".", ".hidden", "a/b", "../m1", "m1/..", "m1\\x",
                                  "m1\x00"])
def test_names_outside_the_root_are_no_model(root: Path, name: str) -> None:
    lazy = tier(root)
    train_linear(root / ".hidden", 1)
    assert not valid_name(name)
    with pytest.raises(ModelNotFound):
        lazy.model(name)
    assert lazy.loads == 0


def test_a_local_roots_folders_are_read_on_every_call(root: Path) -> None:
    lazy = tier(root, clock=lambda: 0.0)
    assert lazy.names() == [f"m{seed}" for seed in range(1, 7)]
    train_linear(root / "late", 7)
    (root / ".copying").mkdir()
    assert "late" in lazy.names() and lazy.exists("late")  # no listing to wait for
    assert ".copying" not in lazy.names() and not lazy.exists(".copying")


def test_unknown_folder_is_not_found(root: Path) -> None:
    with pytest.raises(ModelNotFound, match="'m9' not found"):
        tier(root).model("m9")


def test_unload_is_kept_by_every_worker_until_loaded_again(root: Path, tmp_path_factory:
                                                           pytest.TempPathFactory) -> None:
    state = StateDir(str(tmp_path_factory.mktemp("state")))
    one = tier(root, unloaded=state.names("unloaded_models"))
    other = tier(root, unloaded=state.names("unloaded_models"))
    answer(one, "m2")
    answer(other, "m2")
    assert one.unload("m2")
    with pytest.raises(ModelNotFound, match="unloaded"):
        one.model("m2")
    other.sweep()  # the other worker's next poll
    assert other.find("m2") is None
    served, loaded = one.load("m2")
    assert loaded and served.ready
    assert answer(other, "m2") == linear_answer(2, ROW)


def test_xgboost_models_load_beside_scikit_learn(root: Path) -> None:
    train_booster(root / "b", 4)
    lazy = tier(root, models=6)
    loaded = lazy.model("b").default()
    outputs = loaded.predictor.predict_tensors({"input-0": np.array([[0.0], [1.0]],
                                                                    dtype=np.float32)})
    assert np.allclose(next(iter(outputs.values())), [4.0, -4.0], atol=1e-6)
    assert [entry.state for entry in lazy.entries() if entry.name == "b"] == ["AVAILABLE"]


def test_a_folder_deleted_while_loaded_serves_until_evicted(root: Path) -> None:
    import shutil

    lazy = tier(root, models=1)
    answer(lazy, "m1")
    shutil.rmtree(root / "m1")
    assert answer(lazy, "m1") == linear_answer(1, ROW)  # held: its files were read
    answer(lazy, "m2")  # evicts m1
    with pytest.raises(ModelNotFound, match="'m1' not found"):
        lazy.model("m1")


def test_a_model_loading_when_an_eviction_comes_is_not_evicted(root: Path) -> None:
    started, release = threading.Event(), threading.Event()
    Slow = held_at("m2/1", started, release)

    lazy = LazyTier(LazySettings(str(root), 2 * one_size(root), 30.0), lambda name: Slow,
                    measure=no_growth)
    answer(lazy, "m1")
    loading = threading.Thread(target=answer, args=(lazy, "m2"))
    loading.start()
    assert started.wait(10)
    assert lazy.unload("m1")  # an eviction while m2 loads
    assert [entry.state for entry in lazy.entries() if entry.name == "m2"] == ["LOADING"]
    release.set()
    loading.join()
    assert [name for name, _ in lazy.held()] == ["m2"]
    assert answer(lazy, "m2") == linear_answer(2, ROW)


def test_a_model_unloaded_as_it_loads_is_not_served(root: Path, tmp_path_factory:
                                                    pytest.TempPathFactory) -> None:
    started, release = threading.Event(), threading.Event()
    Slow = held_at("m2/1", started, release)

    state = StateDir(str(tmp_path_factory.mktemp("state")))
    lazy = LazyTier(LazySettings(str(root), 10**9, 30.0), lambda name: Slow, measure=no_growth,
                    unloaded=state.names("unloaded_models"))
    answer(lazy, "m1")
    failed: list[BaseException] = []
    loading = threading.Thread(target=lambda: failed.extend(
        [pytest.raises(ModelNotFound, lazy.model, "m2").value]))
    loading.start()
    assert started.wait(10)
    lazy.unload("m2")
    release.set()
    loading.join()
    assert "unloaded as it loaded" in str(failed[0])
    assert lazy.find("m2") is None
