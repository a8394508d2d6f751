"""LightGBM's explanations: for every row, by column name, the attributions are LightGBM's
own TreeSHAP contributions (``pred_contrib=True``) and, with the baseline, add up to its raw
score (``raw_score=True``): regression, binary and three classes, with categories and
missing values, from a text model file and from the scikit-learn wrapper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flask_predict.codecs import explanation_rows
from flask_predict_lightgbm import LightGBMPredictor
from tests.explained import assert_explains, rows_of
from tests.gbm_models import ROWS, TIERS, frame, train_lightgbm

from .test_lightgbm import MANY, columns

NAMES = ["color", "size", "grade"]


@pytest.mark.parametrize("target", ["price", "sold", "tier"])
@pytest.mark.parametrize("fmt", ["txt", "joblib"])
def test_attributions_are_lightgbms_own_and_add_up(tmp_path: Path, target: str,
                                                   fmt: str) -> None:
    fitted = train_lightgbm(tmp_path, target, fmt)
    predictor = LightGBMPredictor.from_path(str(tmp_path / "1"))
    outputs = 3 if target == "tier" else 1
    for rows in (ROWS, MANY):
        explained = rows_of(explanation_rows(predictor.explain(columns(rows))))
        own = fitted.booster_.predict(frame(rows), pred_contrib=True).reshape(
            len(rows), outputs, -1)
        raw = fitted.booster_.predict(frame(rows), raw_score=True)
        assert len(explained) == len(rows) and len(explained[0]) == outputs
        assert_explains(explained, own, raw, NAMES, "raw_score")
    labels = [a.get("outputDisplayName") for a in explained[0]]
    if fmt == "joblib":  # the wrapper knows its classes: the positive one, or each
        assert labels == {"price": [None], "sold": ["1"], "tier": sorted(TIERS)}[target]
    else:
        assert labels == [None] * outputs
