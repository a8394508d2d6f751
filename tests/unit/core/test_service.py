"""service: the only caller of predictor methods; failures are wrapped, never leaked."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
import pytest
from flask import Flask

from flask_predict import FlaskPredict, InvalidInput, Predictor, PredictorFailed
from flask_predict.errors import FailedPrecondition
from flask_predict.core.service import ModelService
from flask_predict.core.state import PredictState
from flask_predict.types import InferenceRequest, Tensor


class Fragile(Predictor):
    """Fails in the ways real predictors do."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Fragile:
        return cls()

    def predict(self, instances: list[Any], **kwargs: Any) -> Any:
        mode = kwargs.get("mode")
        if mode == "raise":
            raise ZeroDivisionError("boom")
        if mode == "invalid":
            raise InvalidInput("bad instance 0")
        if mode == "not_a_list":
            return {"a": 1}
        if mode == "array":
            return np.array(instances) * 2
        return instances

    def predict_request(self, body: Any) -> Any:
        if body == "raise":
            raise KeyError("instances")
        return {"whole": body}

    def predict_tensors(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        (x,) = inputs.values()
        if x.size and x.flat[0] < 0:
            return [1, 2]  # type: ignore[return-value]  # a broken plugin
        if x.size and x.flat[0] == 0:
            return {"predictions": x, "labels": [0]}  # type: ignore[dict-item]  # not an array
        if x.size and x.flat[0] == 3:
            return MappingProxyType({"predictions": x * 2})  # type: ignore[return-value]
        return {"predictions": x * 2}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> PredictState:
    base = tmp_path_factory.mktemp("fragile")
    (base / "4").mkdir()
    predict = FlaskPredict()
    predict.register_predictor("fragile", Fragile)
    app = Flask("service")
    app.config["PREDICT_MODELS"] = {"f": {"base_path": str(base), "predictor": "fragile"}}
    app.config["PREDICT_POLL_SECONDS"] = 0
    predict.init_app(app)
    state: PredictState = app.extensions["predict"]
    return state


def test_instances_door(state: PredictState) -> None:
    service = state.service
    with service.use("f") as loaded:
        assert loaded.version == 4
        assert service.predict_instances(loaded, [1, 2], {}) == [1, 2]
        assert service.predict_instances(loaded, [1, 2], {"mode": "array"}) == [2, 4]
    assert loaded.uses == 0


def test_predictor_exceptions_are_wrapped_with_the_cause(state: PredictState,
                                                         request: pytest.FixtureRequest) -> None:
    service: ModelService = state.service
    loaded = service.acquire("f")
    request.addfinalizer(loaded.release)
    with pytest.raises(PredictorFailed, match="model 'f' failed to predict") as info:
        service.predict_instances(loaded, [1], {"mode": "raise"})
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(InvalidInput, match="bad instance 0"):
        service.predict_instances(loaded, [1], {"mode": "invalid"})
    with pytest.raises(PredictorFailed, match="not_a_list|dict"):
        service.predict_instances(loaded, [1], {"mode": "not_a_list"})


def test_tensor_door(state: PredictState) -> None:
    service = state.service
    with service.use("f") as loaded:
        response = service.predict(loaded, InferenceRequest("f", {"x": np.array([1.0, 2.0])}))
        assert response.version == 4
        assert response.outputs["predictions"].tolist() == [2.0, 4.0]
        with pytest.raises(PredictorFailed, match="not a mapping of arrays"):
            service.predict(loaded, InferenceRequest("f", {"x": np.array([-1.0])}))
        with pytest.raises(PredictorFailed, match="dict, not a mapping of arrays"):
            service.predict(loaded, InferenceRequest("f", {"x": np.array([0.0])}))
        mapped = service.predict(loaded, InferenceRequest("f", {"x": np.array([3.0])}))
        assert type(mapped.outputs) is dict and mapped.outputs["predictions"].tolist() == [6.0]
    assert loaded.uses == 0


def test_a_call_is_timed_on_the_record_and_holds_the_version_lock(state: PredictState) -> None:
    from flask_predict.request.record import RequestRecord, current_request

    service = state.service
    record = RequestRecord("test", "predict", "id", False, 0)
    token = current_request.set(record)
    seen: list[bool] = []
    try:
        with service.use("f") as loaded:
            def inside(value: int, *, twice: bool) -> int:
                seen.append(loaded.calls.locked())
                return value * 2 if twice else value

            assert service.call(loaded, "predict", inside, (3,), {"twice": True}) == 6
            with pytest.raises(PredictorFailed, match="failed to regress"):
                service.call(loaded, "regress", inside, (3,), {"wrong": 1})
            assert not loaded.calls.locked()
    finally:
        current_request.reset(token)
    assert seen == [True]
    assert (record.model, record.version) == ("f", "4")
    assert 0 < record.predict_started <= record.predict_ended
    assert record.predict_seconds > 0


def test_whole_request_door(state: PredictState) -> None:
    """A Vertex AI routine's door: the body in, the predictor's answer out as it is."""
    service = state.service
    with service.use("f") as loaded:
        assert service.predict_request(loaded, {"instances": [1]}) == {
            "whole": {"instances": [1]}}
        with pytest.raises(PredictorFailed, match="model 'f' failed to predict") as info:
            service.predict_request(loaded, "raise")
        assert isinstance(info.value.__cause__, KeyError)
    assert loaded.uses == 0


def test_predictors_refuse_whole_requests_by_default() -> None:
    with pytest.raises(FailedPrecondition, match="does not take whole request bodies"):
        Predictor.predict_request(Fragile(), {"instances": [1]})
    assert not Fragile().metadata().request_door
