"""Google's AI Platform routine tutorial, unchanged: its pickled ``preprocess.ZeroCenterer``
loads, and the routine answers what it answers in Google's runtime."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from flask import Flask

from flask_predict import FlaskPredict, close_app
from flask_predict.models.plugins import detect_predictor, manifests
from flask_predict_custom import CustomPredictor
from flask_predict_custom.modules import Router
from tests.routines import IRIS_ROWS, aiplatform_answers, make_tutorial


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tutorial(tmp_path_factory.mktemp("iris_routine") / "1")


@pytest.fixture(scope="module")
def expected(tutorial: Path) -> dict[str, object]:
    labels, probabilities = aiplatform_answers(tutorial, "predictor.MyPredictor", [
        (IRIS_ROWS, {}), (IRIS_ROWS, {"probabilities": True})])
    return {"labels": labels, "probabilities": probabilities}


@pytest.mark.parametrize("options", [{"class": "predictor.MyPredictor"}, {}],
                         ids=["named", "detected"])
def test_tutorial_answers_as_in_googles_runtime(tutorial: Path, expected: dict[str, object],
                                                options: dict[str, str]) -> None:
    predictor = CustomPredictor.from_path(str(tutorial), **options)
    try:
        assert predictor.predict(IRIS_ROWS) == expected["labels"]
        assert predictor.predict(IRIS_ROWS, probabilities=True) == expected["probabilities"]
    finally:
        predictor.close()


def test_plain_names_route_while_loaded_and_leave_with_the_version(tutorial: Path) -> None:
    # a routine another test left loaded keeps its own plain names routed: this version
    # leaves the module table as it found it
    before = sys.modules.get("preprocess")
    predictor = CustomPredictor.from_path(str(tutorial), **{"class": "predictor.MyPredictor"})
    try:
        assert isinstance(sys.modules["preprocess"], Router)
        assert isinstance(sys.modules["predictor"], Router)
        centerer = type(predictor.user._preprocessor)
        assert centerer.__module__.startswith("flask_predict_custom.versions.")
    finally:
        predictor.close()
    assert sys.modules.get("preprocess") is before
    assert not [name for name in sys.modules if name.startswith(
        predictor.modules.package)]


def test_detection_prefers_the_routine_to_its_model_file(tutorial: Path) -> None:
    """The folder holds model.joblib (scikit-learn's file) beside the routine's code."""
    assert detect_predictor(str(tutorial), {}, manifests()) == "custom"


def test_served_on_the_aiplatform_route(tutorial: Path, expected: dict[str, object]) -> None:
    app = Flask(__name__)
    app.config["PREDICT_MODELS"] = {"iris": {"base_path": str(tutorial.parent)}}
    app.config["PREDICT_POLL_SECONDS"] = 0
    FlaskPredict(app)
    try:
        client = app.test_client()
        url = "/v1/projects/p/models/iris:predict"
        got = client.post(url, json={"instances": IRIS_ROWS})
        assert got.status_code == 200
        assert got.get_json() == {"predictions": expected["labels"]}
        got = client.post(url, json={"instances": IRIS_ROWS, "probabilities": True})
        assert got.get_json() == {"predictions": expected["probabilities"]}
    finally:
        close_app(app)
