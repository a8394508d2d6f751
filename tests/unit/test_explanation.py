"""The Explanation a predictor returns: its checks, its JSON rows, and the contract's
default refusal."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from flask_predict import Explanation, FailedPrecondition, Predictor, PredictorFailed
from flask_predict.codecs import explanation_rows
from flask_predict.explanation import checked


def made(**changes: Any) -> Explanation:
    fields: dict[str, Any] = {
        "attributions": {"x": np.array([[[1.0, 2.0]], [[3.0, -1.0]]]),
                         "c": np.array([[0.5], [0.25]])},
        "baseline": np.array([[10.0], [10.0]]), "output": np.array([[13.5], [12.25]]),
        "output_name": "margin"}
    return Explanation(**{**fields, **changes})


def test_rows_in_googles_shape() -> None:
    first, second = explanation_rows(checked(made(labels=("yes",)), 2, "m"))
    assert first == {"attributions": [{
        "baselineOutputValue": 10.0, "instanceOutputValue": 13.5,
        "featureAttributions": {"x": [1.0, 2.0], "c": 0.5}, "outputDisplayName": "yes",
        "approximationError": 0.0, "outputName": "margin"}]}
    assert second["attributions"][0]["featureAttributions"] == {"x": [3.0, -1.0], "c": 0.25}


def test_several_outputs_are_indexed_and_the_gap_is_reported() -> None:
    explanation = made(attributions={"c": np.array([[1.0, 2.0]])},
                       baseline=np.array([[0.0, 0.0]]), output=np.array([[1.0, 2.5]]))
    (row,) = explanation_rows(checked(explanation, 1, "m"))
    assert [a["outputIndex"] for a in row["attributions"]] == [[0], [1]]
    assert [a["approximationError"] for a in row["attributions"]] == [0.0, 0.5]


@pytest.mark.parametrize("returned, problem", [
    ({"c": [1.0]}, "with a dict, not an Explanation"),
    (made(baseline=np.array([[1.0]])), "baseline of shape [1, 1], not [2, outputs]"),
    (made(output=np.array([1.0, 2.0])), "output of shape [2]"),
    (made(labels=("a", "b")), "2 labels for 1 outputs"),
    (made(attributions={}), "no attributions"),
    (made(attributions={"c": np.array([1.0, 2.0])}), "attributions of 'c' of shape [2]"),
    (made(baseline=np.array([[np.nan], [1.0]])), "not finite"),
])
def test_a_wrong_explanation_is_the_predictors_failure(returned: Any, problem: str) -> None:
    with pytest.raises(PredictorFailed, match="model 'm' explained") as failed:
        checked(returned, 2, "m")
    assert problem in failed.value.message


class Plain(Predictor):
    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Plain:
        return cls()

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        return instances


def test_the_contracts_default_refuses_before_decoding() -> None:
    with pytest.raises(FailedPrecondition, match="this custom model cannot explain its "
                                                  "predictions: explanations are served for"):
        Plain().explain_instances([object()])
