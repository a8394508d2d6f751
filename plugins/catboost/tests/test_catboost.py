"""The CatBoost plugin on real models trained here: answers equal to CatBoost's own,
categorical and text features by name, NaN and null numbers missing, a missing category
refused, threads per worker."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import catboost as cb
import joblib
import numpy as np
import pytest

from flask_predict import InvalidInput
from flask_predict.models.plugins import detect_predictor, manifests
from flask_predict_catboost import CatBoostPredictor
from tests.gbm_models import REVIEWS, ROWS, TIERS, catboost_frame, train_catboost

SENT = [{**row, "color": row["color"] or "none"} for row in ROWS]
"""The rows as sent: CatBoost reads no missing category, so a missing color is "none"."""


def text(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else str(v).encode() for v in values]
    return out


def columns(rows: list[dict[str, Any]], with_text: bool = True) -> dict[str, np.ndarray]:
    sent = {"color": text([row["color"] for row in rows]),
            "size": np.array([np.nan if row["size"] is None else row["size"] for row in rows]),
            "grade": np.array([float(row["grade"]) for row in rows])}
    if with_text:
        sent["review"] = text([REVIEWS[i % len(REVIEWS)] for i in range(len(rows))])
    return sent


@pytest.mark.parametrize("target", ["price", "sold", "tier"])
@pytest.mark.parametrize("fmt", ["cbm", "json", "joblib"])
def test_answers_equal_catboosts_own(tmp_path: Path, target: str, fmt: str) -> None:
    fitted = train_catboost(tmp_path, target, fmt)
    assert detect_predictor(str(tmp_path / "1"), {}, manifests()) == "catboost"
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"))
    meta = predictor.metadata()
    with_text = fmt != "json"
    assert meta.platform == "catboost" and meta.signature.tabular
    assert [(s.name, s.datatype) for s in meta.signature.inputs] == [
        ("color", "BYTES"), ("size", "FP64"), ("grade", "BYTES")] + (
        [("review", "BYTES")] if with_text else [])
    assert meta.properties["cat_features"] == ["color", "grade"]
    for rows in (SENT, SENT[:1], SENT * 5):
        out = predictor.predict_tensors(columns(rows, with_text))
        data = catboost_frame(rows, with_text)
        if target == "price":
            np.testing.assert_allclose(out["predict"], fitted.predict(data), rtol=1e-12)
        else:
            assert out["predict"].tolist() == fitted.predict(data).reshape(-1).tolist()
            np.testing.assert_allclose(out["predict_proba"], fitted.predict_proba(data),
                                       rtol=1e-12)
    if target == "tier":
        assert meta.properties["classes"] == sorted(TIERS)
        # JSON rows carry a category as text, as the input's BYTES datatype says
        instances = [{**row, "grade": str(row["grade"]), **(
            {"review": REVIEWS[i]} if with_text else {})} for i, row in enumerate(SENT)]
        assert predictor.predict(instances) == fitted.predict(
            catboost_frame(SENT, with_text)).reshape(-1).tolist()


def test_a_category_as_a_whole_number_or_its_text_is_one(tmp_path: Path) -> None:
    train_catboost(tmp_path, "sold")
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"))
    as_number = predictor.predict_tensors(columns(SENT))
    as_text = predictor.predict_tensors({**columns(SENT), "grade": text(
        [row["grade"] for row in SENT])})
    np.testing.assert_array_equal(as_number["predict_proba"], as_text["predict_proba"])


@pytest.mark.parametrize(("change", "message"), [
    ({"color": text(["red", None, "red", "red"])}, "column 'color': value 1 is missing"),
    ({"grade": np.array([3.5, 3.0, 7.0, 3.0])}, "column 'grade': a category is text or a whole"),
    ({"grade": np.array([np.nan, 3.0, 7.0, 3.0])}, "column 'grade': a missing value"),
    ({"review": text(["great", None, "x", "y"])}, "column 'review': value 1 is missing"),
    ({"size": text(["1", "2", "3", "4"])}, "column 'size': expected numbers, got text"),
    ({"weight": np.ones(4)}, "unknown input(s) ['weight']"),
])
def test_a_wrong_column_is_the_clients_error(tmp_path: Path, change: dict[str, Any],
                                             message: str) -> None:
    train_catboost(tmp_path, "tier")
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"))
    with pytest.raises(InvalidInput) as caught:
        predictor.predict_tensors({**columns(SENT), **change})
    assert message in caught.value.message


def test_a_matrix_model_takes_one_input_and_checks_its_width(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 4))
    x[::7, 1] = np.nan
    model = cb.CatBoostRegressor(iterations=10, verbose=False, thread_count=1,
                                 allow_writing_files=False).fit(x, x[:, 0] * 2)
    model.save_model(tmp_path / "model.cbm")
    predictor = CatBoostPredictor.from_path(str(tmp_path))
    assert [(s.name, s.shape) for s in predictor.metadata().signature.inputs] == [
        ("inputs", (-1, 4))]
    np.testing.assert_allclose(predictor.predict_tensors({"x": x[:9]})["predict"],
                               model.predict(x[:9]), rtol=1e-12)
    with pytest.raises(InvalidInput, match=r"expected shape \[-1, 4\]"):
        predictor.predict([[1.0, 2.0, 3.0]])


def test_a_wrong_object_in_a_pickle(tmp_path: Path) -> None:
    joblib.dump({"not": "a model"}, tmp_path / "model.joblib")
    with pytest.raises(TypeError, match="not a CatBoost model"):
        CatBoostPredictor.from_path(str(tmp_path))


def test_after_fork_takes_the_workers_thread_count(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    train_catboost(tmp_path, "sold")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"))
    assert predictor.threads == 3
    pinned = CatBoostPredictor.from_path(str(tmp_path / "1"), thread_count=2)
    pinned.after_fork()
    assert pinned.threads == 2


def test_a_forked_process_predicts_after_its_parent_did_on_several_threads(
        tmp_path: Path) -> None:
    """Why the manifest shares CatBoost models: its pool survives a fork (a hung child is
    killed by its alarm and fails the test)."""
    train_catboost(tmp_path, "tier")
    predictor = CatBoostPredictor.from_path(str(tmp_path / "1"), thread_count=4)
    many = columns(SENT * 500)
    before = predictor.predict_tensors(many)["predict_proba"]
    # its pool's threads alive and idle: a fork at the very moment one of them still holds
    # the pool's lock, a call just returned, can leave the child waiting on it (seen once,
    # on a loaded machine)
    time.sleep(0.5)
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        signal.alarm(60)
        after = predictor.predict_tensors(many)["predict_proba"]
        os._exit(0 if np.array_equal(after, before) else 3)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
