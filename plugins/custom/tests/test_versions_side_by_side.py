"""Two versions of one routine whose folders hold different code under the same module names
serve side by side in one process, each with its own code: import statements (at load, at
request time, in a thread of the routine's own), names given as text (importlib, pickles)
and a package's submodule."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask

from flask_predict import FlaskPredict, close_app
from flask_predict_custom import CustomPredictor
from flask_predict_custom.modules import Router
from tests.routines import aiplatform_answer, make_versioned

CLASS = {"class": "predictor.Routine"}
ROWS = [1, 2.5]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("versioned")
    make_versioned(base, 1, "one", "x * self.factor")
    make_versioned(base, 2, "two", "x * self.factor + 1000")
    return base


@pytest.fixture(scope="module")
def expected(base: Path) -> dict[int, Any]:
    answers = {v: aiplatform_answer(base / str(v), "predictor.Routine", ROWS) for v in (1, 2)}
    assert answers[1][0]["label"] == "one" and answers[2][0]["scaled"] == 1003
    return answers


@pytest.fixture
def both(base: Path) -> Iterator[dict[int, CustomPredictor]]:
    loaded = {v: CustomPredictor.from_path(str(base / str(v)), **CLASS) for v in (1, 2)}
    yield loaded  # type: ignore[misc]
    for predictor in loaded.values():
        predictor.close()


def test_each_version_answers_with_its_own_code(both: dict[int, Any],
                                                expected: dict[int, Any]) -> None:
    for _ in range(2):  # interleaved
        assert both[1].predict(ROWS) == expected[1]
        assert both[2].predict(ROWS) == expected[2]


def test_threads_of_one_worker_run_both_versions_at_once(both: dict[int, Any],
                                                         expected: dict[int, Any]) -> None:
    """As a worker's gRPC threads and its HTTP thread do."""
    start = threading.Barrier(4)
    wrong: list[str] = []

    def ask(version: int) -> None:
        start.wait()
        for _ in range(100):
            answer = both[version].predict(ROWS)
            if answer != expected[version]:
                wrong.append(f"version {version} answered {answer}")
                return

    threads = [threading.Thread(target=ask, args=(v,)) for v in (1, 2, 1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_closing_one_version_leaves_the_other_whole(base: Path,
                                                    expected: dict[int, Any]) -> None:
    one = CustomPredictor.from_path(str(base / "1"), **CLASS)
    two = CustomPredictor.from_path(str(base / "2"), **CLASS)
    one.close()
    assert not [name for name in sys.modules if name.startswith(one.modules.package)]
    assert two.predict(ROWS) == expected[2]
    assert isinstance(sys.modules["helpers"], Router)
    two.close()
    assert not {"helpers", "lib", "lib.extra"} & set(sys.modules)


def test_outside_a_call_a_name_given_as_text_finds_nothing(both: dict[int, Any]) -> None:
    with pytest.raises(AttributeError, match="resolve only during flask-predict's calls"):
        sys.modules["helpers"].LABEL


def test_both_versions_served_by_one_app(base: Path, expected: dict[int, Any]) -> None:
    app = Flask(__name__)
    app.config.update(PREDICT_POLL_SECONDS=0, PREDICT_MODELS={"scaler": {
        "base_path": str(base), "version_policy": {"all": {}}, **CLASS}})
    FlaskPredict(app)
    try:
        client = app.test_client()
        for version in (1, 2, 1):
            got = client.post(f"/v1/projects/p/models/scaler/versions/{version}:predict",
                              json={"instances": ROWS})
            assert got.get_json() == {"predictions": expected[version]}
    finally:
        close_app(app)
