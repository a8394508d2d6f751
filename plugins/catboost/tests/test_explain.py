"""CatBoost's explanations: for every row, by column name (categorical and text features
included), the attributions are CatBoost's own SHAP values (``ShapValues``) and, with the
expected value as the baseline, add up to its raw formula value (``RawFormulaVal``):
regression, binary and three classes, from ``model.cbm`` and CatBoost's JSON."""

from __future__ import annotations

from pathlib import Path

import catboost as cb
import pytest

from flask_predict.codecs import explanation_rows
from flask_predict_catboost import CatBoostPredictor
from tests.explained import assert_explains, rows_of
from tests.gbm_models import TIERS, catboost_frame, train_catboost

from .test_catboost import SENT, columns


@pytest.mark.parametrize("target", ["price", "sold", "tier"])
@pytest.mark.parametrize("fmt", ["cbm", "json"])
def test_attributions_are_catboosts_own_and_add_up(tmp_path: Path, target: str,
                                                   fmt: str) -> None:
    fitted = train_catboost(tmp_path, target, fmt)
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"))
    with_text = fmt != "json"
    names = ["color", "size", "grade"] + (["review"] if with_text else [])
    explained = rows_of(explanation_rows(predictor.explain(columns(SENT, with_text))))
    pool = cb.Pool(catboost_frame(SENT, text=with_text), cat_features=["color", "grade"],
                   text_features=["review"] if with_text else None)
    assert len(explained) == len(SENT) and len(explained[0]) == (3 if target == "tier" else 1)
    assert_explains(explained, fitted.get_feature_importance(pool, type="ShapValues"),
                    fitted.predict(pool, prediction_type="RawFormulaVal"), names,
                    "RawFormulaVal")
    labels = [a.get("outputDisplayName") for a in explained[0]]
    assert labels == {"price": [None], "sold": ["1"], "tier": sorted(TIERS)}[target]
