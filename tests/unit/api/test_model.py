"""The Python API (:class:`flask_predict.api.Model`): real models trained here, asked by
DataFrame, numpy array and instances, compared with the frameworks' own answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from flask_predict.api import Model
from flask_predict.models.demo import train_iris
from flask_predict.errors import ConfigError, FailedPrecondition, InvalidInput
from tests.conftest import AppFactory
from tests.routines import IRIS_ROWS, aiplatform_answer, make_tutorial
from tests.tabular_models import COLORS, PEOPLE_ROWS, SHOP_ROWS, frame, train_people, train_shops


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("api")


@pytest.fixture(scope="module")
def people(root: Path) -> Any:
    return train_people(root / "people")


@pytest.fixture(scope="module")
def shops(root: Path) -> Any:
    return train_shops(root / "shops")


def test_a_pipeline_by_column_name(root: Path, people: Any) -> None:
    rows = frame(PEOPLE_ROWS)
    with Model.load(root / "people") as model:
        assert model.name == "people" and model.version == 1
        got = model.predict(rows[["segment", "city", "income", "age"]])  # any column order
        assert got["predict"].tolist() == people.predict(rows).tolist()
        np.testing.assert_allclose(model.predict(rows, outputs=["predict_proba"])[
            "predict_proba"], people.predict_proba(rows), rtol=1e-12)
        assert list(model.predict(rows, outputs=["predict"])) == ["predict"]
        # the same rows as instances, as AI Platform's route takes them
        assert model.predict_instances([list(row.values()) for row in PEOPLE_ROWS]) == \
            people.predict(rows).tolist()
        with pytest.raises(InvalidInput, match="missing column.*'segment'"):
            model.predict(rows.drop(columns=["segment"]))
        with pytest.raises(InvalidInput, match=r"unknown input\(s\) \[.other.\]"):
            model.predict(rows.assign(other=1))
        with pytest.raises(InvalidInput, match='unknown category "Oslo"'):
            model.predict(rows.assign(city=["Oslo", "Rome", "Paris"]))
        with pytest.raises(InvalidInput, match="unknown output"):
            model.predict(rows, outputs=["nope"])


def test_xgboost_categories_and_missing_values(root: Path, shops: Any) -> None:
    """XGBoost's probability of the positive class (``predict``), in float32."""
    rows = frame(SHOP_ROWS).astype({"size": float})
    own = rows.assign(color=pd.Categorical(rows.color, categories=COLORS))
    with Model.load(root / "shops") as model:
        got = model.predict(rows)["predict"]
        np.testing.assert_allclose(got, shops.predict_proba(own)[:, 1], rtol=1e-6)
        categorical = model.predict(own)["predict"]  # a categorical column: the same answers
        np.testing.assert_array_equal(categorical, got)


def test_numpy_rows_and_errors(root: Path) -> None:
    import joblib

    train_iris(root / "iris")
    own = joblib.load(root / "iris" / "1" / "model.joblib")
    with Model.load(root / "iris" / "1", predictor="sklearn") as model:
        assert model.predict(np.array(IRIS_ROWS))["predict"].tolist() == \
            own.predict(np.array(IRIS_ROWS)).tolist()
        assert model.predict(pd.DataFrame(IRIS_ROWS))["predict"].tolist() == \
            own.predict(np.array(IRIS_ROWS)).tolist()
        with pytest.raises(InvalidInput, match="expected shape"):
            model.predict(np.array([[1.0, 2.0]]))
        with pytest.raises(InvalidInput, match="non-empty"):
            model.predict_instances([])
        with pytest.raises(TypeError, match="predict_instances"):
            model.predict([[1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(ConfigError, match="not a directory"):
        Model.load(root / "absent")
    with pytest.raises(ConfigError, match="unknown"):
        Model.load(root / "iris", options={"colour": "red"})
    with pytest.raises(ConfigError, match="only gs://, s3:// and local paths"):
        Model.load("hdfs://cluster/iris")  # buckets load: tests/storage/test_batch_inputs.py


def test_a_custom_routine_takes_its_instances(root: Path) -> None:
    folder = make_tutorial(root / "routine" / "1")
    expected = aiplatform_answer(folder, "predictor.MyPredictor", IRIS_ROWS,
                                 probabilities=True)
    with Model.load(folder) as model:
        assert model.takes_instances
        assert model.predict_instances(IRIS_ROWS, probabilities=True) == expected
        assert model.predict_request({"instances": IRIS_ROWS, "probabilities": True}) == \
            {"predictions": expected}
        labels = aiplatform_answer(folder, "predictor.MyPredictor", IRIS_ROWS)
        # the tensor door: text as BYTES, as V2 carries it
        assert model.predict(pd.DataFrame(IRIS_ROWS))["predictions"].tolist() == \
            [label.encode() for label in labels]


def test_the_documented_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """docs/python-api.md's first example, on the demo's churn model, prints what it says."""
    from flask_predict.models.demo import train_churn

    page = (Path(__file__).parents[3] / "docs" / "python-api.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    train_churn(tmp_path / "demo" / "models" / "churn")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "python-api.md", "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert f"prints `{printed}`" in page


@pytest.mark.parametrize("kind", ["people", "shops"])
def test_explanations_are_the_servers(root: Path, people: Any, shops: Any, kind: str,
                                      make_app: AppFactory) -> None:
    """``explain_instances`` answers what Vertex AI's explain route answers for the same
    instances: a pipeline's coefficients, XGBoost's TreeSHAP with a missing value."""
    rows = PEOPLE_ROWS if kind == "people" else SHOP_ROWS
    instances = [dict(row) for row in rows]
    app = make_app({kind: {"base_path": str(root / kind)}})
    served = app.test_client().post(
        f"/v1/projects/p/locations/l/endpoints/{kind}:explain", json={"instances": instances})
    assert served.status_code == 200, served.get_json()
    with Model.load(root / kind) as model:
        predictions, explanations = model.explain_instances(instances)
    assert predictions == served.get_json()["predictions"]
    assert explanations == served.get_json()["explanations"]
    assert len(explanations) == len(rows) and explanations[0]["attributions"]


def test_a_model_that_cannot_explain_says_so(root: Path) -> None:
    folder = make_tutorial(root / "plain" / "1")
    with Model.load(folder, options={"class": "predictor.MyPredictor"}) as model:
        with pytest.raises(FailedPrecondition, match="cannot explain"):
            model.explain_instances(IRIS_ROWS)
        with pytest.raises(InvalidInput, match="non-empty"):
            model.explain_instances([])
