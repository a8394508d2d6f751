"""A custom routine's own ``explain(instances, **kwargs)``: its Explanation is the answer,
with the keywords it takes; a routine without one is refused, naming what can explain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flask_predict import FailedPrecondition
from flask_predict.codecs import explanation_rows
from flask_predict_custom import CustomPredictor
from tests.models import make_custom, make_explaining

HOUSES = [{"rooms": 3, "age": 10}, {"rooms": 1, "age": 80}]


def test_the_routines_own_explanation(tmp_path: Path) -> None:
    predictor = CustomPredictor.from_path(str(make_explaining(tmp_path / "house") / "1"))
    first, second = explanation_rows(predictor.explain_instances(HOUSES, unknown=1))
    assert first == {"attributions": [{
        "baselineOutputValue": 100.0, "instanceOutputValue": 185.0,
        "featureAttributions": {"rooms": 90.0, "age": -5.0}, "outputDisplayName": "price",
        "approximationError": 0.0, "outputName": "price"}]}
    assert second["attributions"][0]["instanceOutputValue"] == predictor.predict(HOUSES)[1]
    doubled = explanation_rows(predictor.explain_instances(HOUSES[:1], scale=2.0))
    assert doubled[0]["attributions"][0]["featureAttributions"] == {"rooms": 180.0,
                                                                    "age": -10.0}


def test_tensors_reach_it_as_instances(tmp_path: Path) -> None:
    predictor = CustomPredictor.from_path(str(make_explaining(tmp_path / "house") / "1"))
    columns = {"rooms": np.array([3.0, 1.0]), "age": np.array([10.0, 80.0])}
    assert explanation_rows(predictor.explain(columns)) == \
        explanation_rows(predictor.explain_instances(HOUSES))


def test_a_routine_without_explain_is_refused(tmp_path: Path) -> None:
    predictor = CustomPredictor.from_path(str(make_custom(tmp_path / "echo") / "1"),
                                          **{"class": "predictor.EchoPredictor"})
    with pytest.raises(FailedPrecondition, match="EchoPredictor .*cannot explain"):
        predictor.explain_instances([1])
