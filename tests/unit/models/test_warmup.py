"""Warm-up: sample requests replayed on a new version before it is served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import pytest

from flask_predict import ConfigError, ModelMetadata, Predictor, Signature, TensorSpec
from flask_predict.models.plugins import load_predictor_class
from flask_predict.models.repository import ModelRepository
from flask_predict.types import DEFAULT_SIGNATURE, InferenceRequest, ModelSpec, Tensor
from flask_predict.models.warmup import MAX_REQUESTS, WARMUP_FILE, read_json_requests, warm_up
from tests import models


class RecordingPredictor(Predictor):
    """Records every call; its own warm-up hook returns the requests in ``hook.json``."""

    calls: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, model_dir: str) -> None:
        self.model_dir = model_dir

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> RecordingPredictor:
        return cls(model_dir)

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        RecordingPredictor.calls.append(("predict", (instances, kwargs)))
        return instances

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        RecordingPredictor.calls.append(("tensors", ({k: v.tolist() for k, v in inputs.items()},
                                                     outputs, signature)))
        if "x" in inputs and np.any(inputs["x"] < 0):
            raise ValueError("negative input")
        return {"y": inputs["x"] * 2}

    def metadata(self) -> ModelMetadata:
        return ModelMetadata("recording", {DEFAULT_SIGNATURE: Signature(
            inputs=(TensorSpec("x", "INT32", (-1,)),),
            outputs=(TensorSpec("y", "INT32", (-1,)),))})

    def warmup_requests(self, model_dir: str) -> list[InferenceRequest]:
        hook = Path(model_dir) / "hook.json"
        if not hook.exists():
            return []
        return [InferenceRequest(model="", inputs={"x": np.asarray(v, dtype=np.int32)})
                for v in json.loads(hook.read_text())]


@pytest.fixture(autouse=True)
def _reset() -> None:
    RecordingPredictor.calls.clear()


def lookup(name: str) -> type[Predictor]:
    return RecordingPredictor if name == "recording" else load_predictor_class(name)


def version(base: Path, number: int, warmup: Any = None, hook: Any = None) -> Path:
    folder = base / str(number)
    (folder / "assets.extra").mkdir(parents=True)
    if warmup is not None:
        text = warmup if isinstance(warmup, str) else json.dumps(warmup)
        (folder / WARMUP_FILE).write_text(text)
    if hook is not None:
        (folder / "hook.json").write_text(json.dumps(hook))
    return folder


def loaded(folder: Path) -> tuple[RecordingPredictor, str]:
    """A freshly loaded version: its predictor and folder, what warm-up is given."""
    return RecordingPredictor.from_path(str(folder)), str(folder)


def test_json_file_replays_both_doors(tmp_path: Path) -> None:
    folder = version(tmp_path, 1, [
        {"instances": [[1, 2]], "signature_name": "serving_default"},
        {"inputs": {"x": [1, 2, 3]}, "output_filter": ["y"]},
    ])
    assert warm_up(*loaded(folder)) == 2
    assert RecordingPredictor.calls == [
        ("predict", ([[1, 2]], {"signature_name": "serving_default"})),
        ("tensors", ({"x": [1, 2, 3]}, ["y"], None)),
    ]


def test_requests_object_form_and_hook(tmp_path: Path) -> None:
    folder = version(tmp_path, 1, {"requests": [{"inputs": {"x": [4]}}]}, hook=[[5], [6]])
    assert warm_up(*loaded(folder)) == 3
    assert [call[1][0] for call in RecordingPredictor.calls] == [
        {"x": [4]}, {"x": [5]}, {"x": [6]}]


def test_no_warmup_file(tmp_path: Path) -> None:
    assert warm_up(*loaded(version(tmp_path, 1))) == 0
    assert read_json_requests(str(tmp_path / "missing.json")) == []


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not valid JSON"),
    ({"instances": [1]}, "must hold a list of request bodies"),
    ([[1, 2]], "request 0: must be a JSON object"),
    ([{"instances": []}], "'instances' must be a non-empty list"),
    ([{"inputs": [1]}], "'inputs' must map input names to values"),
    ([{"inputs": {"x": [1]}, "output_filter": "y"}], "'output_filter' must be a list"),
    ([{"inputs": {"x": [1]}, "signature_name": 3}], "'signature_name' must be a string"),
    ([{"features": [1]}], "needs 'instances' or 'inputs'"),
])
def test_malformed_file(tmp_path: Path, content: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        warm_up(*loaded(version(tmp_path, 1, content)))


@pytest.mark.parametrize(("request_body", "message"), [
    ({"inputs": {"z": [1]}}, "request 0 failed: unknown input 'z'"),
    ({"inputs": {"x": [1.5]}}, "request 0 failed: input 'x': expected INT32 integers"),
    ({"inputs": {"x": [-1]}}, "request 0 failed: ValueError: negative input"),
])
def test_failing_request(tmp_path: Path, request_body: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        warm_up(*loaded(version(tmp_path, 1, [request_body])))


def test_too_many_requests(tmp_path: Path) -> None:
    folder = version(tmp_path, 1, [{"inputs": {"x": [1]}}] * (MAX_REQUESTS + 1))
    with pytest.raises(ConfigError, match="at most 1000"):
        warm_up(*loaded(folder))
    assert RecordingPredictor.calls == []


def test_warmup_runs_before_a_version_is_served(tmp_path: Path) -> None:
    version(tmp_path, 1, [{"inputs": {"x": [1]}}])
    spec = ModelSpec(name="r", base_path=str(tmp_path), predictor="recording")
    repository = ModelRepository.load([spec], lookup)
    assert len(RecordingPredictor.calls) == 1
    version(tmp_path, 2, [{"inputs": {"x": [-1]}}])  # its warm-up fails: a broken version
    repository.sync([spec])
    assert repository.get("r").version == 1
    assert "warm-up request 0 failed: ValueError" in repository.model("r").statuses[2].cause


def test_sklearn_warmup_with_real_model(tmp_path: Path) -> None:
    base = models.train_iris(tmp_path / "iris")
    (base / "1" / "assets.extra").mkdir()
    (base / "1" / WARMUP_FILE).write_text(json.dumps([
        {"instances": [[5.1, 3.5, 1.4, 0.2]]},
        {"inputs": {"inputs": [[6.7, 3.0, 5.2, 2.3]]}},
    ]))
    repository = ModelRepository.load([ModelSpec(name="iris", base_path=str(base))], lookup)
    assert repository.get("iris").version == 1
    (base / "1" / WARMUP_FILE).write_text(json.dumps([{"instances": [[1.0, 2.0]]}]))
    with pytest.raises(ConfigError, match="warm-up request 0 failed"):
        ModelRepository.load([ModelSpec(name="iris", base_path=str(base))], lookup)
