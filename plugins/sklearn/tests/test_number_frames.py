"""Models fitted on a DataFrame of numbers only: the columns are one matrix, and every model
answers to the last bit what it answers for the same frame in process (pytest makes
scikit-learn's warning about a matrix without feature names an error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from flask_predict import FailedPrecondition, InvalidInput, codecs
from flask_predict_sklearn import SklearnPredictor

RNG = np.random.default_rng(3)
NAMES = [f"f{i}" for i in range(12)]
TRAIN = pd.DataFrame(RNG.normal(size=(300, len(NAMES))), columns=NAMES)
TWO = (TRAIN.f0 + TRAIN.f3 > 0).to_numpy()
THREE = np.digitize(TRAIN.f1 - TRAIN.f5, [-0.5, 0.5])

MODELS = {
    "logistic": (LogisticRegression(max_iter=500), TWO),
    "logistic, three classes": (LogisticRegression(max_iter=500), THREE),
    "scaled logistic": (make_pipeline(StandardScaler(), LogisticRegression()), TWO),
    "forest": (RandomForestClassifier(n_estimators=5, random_state=0), THREE),
}


@pytest.fixture(scope="module", params=list(MODELS))
def fitted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[Any, SklearnPredictor]:
    model, target = MODELS[request.param]
    model.fit(TRAIN, target)
    folder = tmp_path_factory.mktemp("numbers")
    joblib.dump(model, folder / "model.joblib")
    predictor = SklearnPredictor.from_path(str(folder))
    assert predictor.numbers == tuple(NAMES)
    return model, predictor


def sent(rows: int) -> pd.DataFrame:
    return pd.DataFrame(RNG.normal(scale=RNG.uniform(0.1, 50.0), size=(rows, len(NAMES))),
                        columns=NAMES)


@pytest.mark.parametrize("rows", [1, 7, 100, 1000])
def test_columns_and_a_column_matrix_answer_as_the_frame(fitted: tuple[Any, SklearnPredictor],
                                                         rows: int) -> None:
    model, predictor = fitted
    frame = sent(rows)
    expected = {"predict": model.predict(frame), "predict_proba": model.predict_proba(frame)}
    columns = {name: frame[name].to_numpy() for name in NAMES}
    matrix = codecs.ColumnMatrix(NAMES, np.ascontiguousarray(frame.to_numpy()))
    for inputs in (columns, matrix):
        for outputs in (["predict"], ["predict_proba"], ["predict", "predict_proba"]):
            got = predictor.predict_tensors(inputs, outputs)
            assert list(got) == outputs
            for name in outputs:
                assert got[name].dtype == expected[name].dtype
                np.testing.assert_array_equal(got[name], expected[name])


def test_the_logistic_regression_skips_scikit_learns_checks(tmp_path: Path) -> None:
    model = LogisticRegression(max_iter=500).fit(TRAIN, TWO)
    joblib.dump(model, tmp_path / "model.joblib")
    predictor = SklearnPredictor.from_path(str(tmp_path))
    assert predictor.linear and predictor.one_pass is not None
    forest = RandomForestClassifier(n_estimators=2, random_state=0).fit(TRAIN, TWO)
    joblib.dump(forest, tmp_path / "model.joblib")
    other = SklearnPredictor.from_path(str(tmp_path))
    assert not other.linear and other.one_pass is None  # it would warn on a matrix


@pytest.mark.parametrize("value, words", [(np.nan, "is missing"), (np.inf, "is infinite")])
def test_a_value_the_model_refuses_names_its_column(fitted: tuple[Any, SklearnPredictor],
                                                    value: float, words: str) -> None:
    """A forest takes a missing value: it answers as for the frame, by the frame."""
    model, predictor = fitted
    frame = sent(3)
    frame.loc[2, "f4"] = value
    for inputs in ({name: frame[name].to_numpy() for name in NAMES},
                   codecs.ColumnMatrix(NAMES, frame.to_numpy())):
        if isinstance(model, RandomForestClassifier) and np.isnan(value):
            np.testing.assert_array_equal(predictor.predict_tensors(inputs, ["predict"])[
                "predict"], model.predict(frame))
            continue
        with pytest.raises(FailedPrecondition, match=f"column 'f4': value 2 {words}"):
            predictor.predict_tensors(inputs, ["predict"])


def test_columns_are_checked_as_before(fitted: tuple[Any, SklearnPredictor]) -> None:
    _, predictor = fitted
    columns = {name: np.zeros(2) for name in NAMES}
    with pytest.raises(InvalidInput, match="missing column"):
        predictor.predict_tensors({k: v for k, v in columns.items() if k != "f2"})
    with pytest.raises(InvalidInput, match="different numbers of rows"):
        predictor.predict_tensors({**columns, "f2": np.zeros(3)})
    with pytest.raises(InvalidInput, match="column 'f2': expected numbers, got text"):
        predictor.predict_tensors({**columns, "f2": np.array(["a", "b"])})
