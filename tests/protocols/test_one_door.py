"""Every protocol goes through one door: a request resolves its model version exactly once
and holds it until its answer is built, so a swap never closes a predictor under it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict, Predictor
from flask_predict.models.repository import ModelRepository

IRIS_ROW = [5.1, 3.5, 1.4, 0.2]

# protocol -> (method, path, body): one request of each kind a protocol runs on a model
REQUESTS: dict[str, tuple[str, str, Any]] = {
    "aiplatform_predict": ("POST", "/v1/projects/p/models/iris:predict",
                           {"instances": [IRIS_ROW]}),
    "aiplatform_predict_version": ("POST", "/v1/projects/p/models/iris/versions/1:predict",
                                   {"instances": [IRIS_ROW]}),
    "aiplatform_describe": ("GET", "/v1/projects/p/models/iris", None),
    "aiplatform_custom": ("POST", "/v1/projects/p/models/echo:predict",
                          {"instances": [[1.0]]}),
    "tfserving_predict": ("POST", "/v1/models/iris:predict", {"instances": [IRIS_ROW]}),
    "tfserving_predict_columns": ("POST", "/v1/models/iris/versions/1:predict",
                                  {"inputs": [IRIS_ROW]}),
    "tfserving_custom": ("POST", "/v1/models/echo:predict", {"instances": [[1.0]]}),
    "tfserving_metadata": ("GET", "/v1/models/iris/metadata", None),
    "tfserving_classify": ("POST", "/v1/models/iris:classify",
                           {"examples": [{"x": IRIS_ROW}]}),
    "v2_infer": ("POST", "/v2/models/iris/infer", {"inputs": [
        {"name": "x", "shape": [1, 4], "datatype": "FP64", "data": IRIS_ROW}]}),
    "v2_metadata": ("GET", "/v2/models/iris/versions/1", None),
    "grps_ndarray": ("POST", "/grps/v1/infer/predict", {"model": "iris", "ndarray": [IRIS_ROW]}),
    "grps_tensors": ("POST", "/grps/v1/infer/predict", {"model": "iris-1", "gtensors": {
        "tensors": [{"name": "x", "dtype": "DT_FLOAT64", "shape": [1, 4],
                     "flat_float64": IRIS_ROW}]}}),
    "grps_metadata": ("POST", "/grps/v1/metadata/model", {"str_data": "iris"}),
}


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every repository lookup made while a test runs."""
    calls: list[tuple[Any, ...]] = []
    original = ModelRepository.get

    def get(self: ModelRepository, *args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelRepository, "get", get)
    return calls


@pytest.mark.parametrize("case", sorted(REQUESTS))
def test_each_request_resolves_its_version_exactly_once(
        client: FlaskClient, app: Flask, counted: list[tuple[Any, ...]], case: str) -> None:
    method, path, body = REQUESTS[case]
    answer = client.open(path, method=method, json=body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert len(counted) == 1, counted
    # and lets go of it: no version of any model is still held
    repository = app.extensions["predict"].service.repository
    held = [(s.name, v.version, v.uses) for s in repository.models()
            for v in s.versions.values() if v.uses]
    assert held == []


class Gate(Predictor):
    """Answers its folder's version number; version 1 waits at a gate while predicting."""

    gate = threading.Event()
    entered = threading.Event()
    closed: list[int] = []

    def __init__(self, version: int) -> None:
        self.version = version

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Gate:
        return cls(int(Path(model_dir).name))

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        if self.version == 1:
            Gate.entered.set()
            assert Gate.gate.wait(30)
        assert self.version not in Gate.closed, "predicting on a closed version"
        return [self.version for _ in instances]

    def close(self) -> None:
        Gate.closed.append(self.version)


@pytest.mark.parametrize("path, body, read", [
    ("/v1/projects/p/models/m:predict", {"instances": [1]},
     lambda j: j["predictions"]),
    ("/v1/models/m:predict", {"instances": [1]}, lambda j: j["predictions"]),
    ("/grps/v1/infer/predict", {"model": "m", "str_data": "x"}, lambda j: j["gtensors"]["tensors"][0]["flat_int64"]),
])
def test_a_request_running_across_a_swap_finishes_on_its_version_which_then_closes(
        tmp_path: Path, path: str, body: Any, read: Callable[[Any], list[Any]]) -> None:
    (tmp_path / "1").mkdir()
    Gate.gate.clear(), Gate.entered.clear(), Gate.closed.clear()
    app = Flask("swap")
    app.config.update(PREDICT_MODELS={"m": {"base_path": str(tmp_path), "predictor": "gate"}},
                      PREDICT_POLL_SECONDS=0)
    predict = FlaskPredict()
    predict.register_predictor("gate", Gate)
    predict.init_app(app)
    repository = app.extensions["predict"].service.repository
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(
        app.test_client().post(path, json=body)))
    thread.start()
    try:
        assert Gate.entered.wait(30)
        (tmp_path / "2").mkdir()
        repository.sync([served.spec for served in repository.models()])
        assert sorted(repository.model("m").versions) == [2]
        assert Gate.closed == []  # version 1 still runs a request
        new = app.test_client().post(path, json=body)
        assert new.status_code == 200 and read(new.get_json()) in ([2], ["2"], [[2]])
    finally:
        Gate.gate.set()
        thread.join(30)
    assert answers[0].status_code == 200, answers[0].get_data(as_text=True)
    assert read(answers[0].get_json()) in ([1], ["1"], [[1]])
    assert Gate.closed == [1]  # closed by the request that held it, as it finished
