"""MLflow model folders, written by MLflow's own ``save_model``, on Spark, Ray Data, Dask,
the Python API and a batch job: each answer compared with MLflow's own on the same table
(``mlflow.pyfunc.spark_udf`` on Spark, ``mlflow.pyfunc.load_model`` elsewhere): a DataFrame
pipeline with a string column, one saved to answer ``predict_proba``, an XGBoost booster
with missing values and a custom ``PythonModel`` returning a named Series."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict import batch
from flask_predict.api import Model
from tests.engines import ENGINE_MARKS
from tests.mlflow.models import NUMBERS, ROWS, frame, reference, save_all

pytestmark = [*ENGINE_MARKS, pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]  # MLflow's advice

MODELS = {
    # name: (its rows, spark_udf's result type, the output column ours answers)
    "sk_skops": (ROWS, "long", "predict"),
    "sk_proba": (ROWS, "array<double>", "predict_proba"),
    "xgb": (NUMBERS, "double", "predict"),
    "custom": (NUMBERS, "double", "a"),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return save_all(tmp_path_factory.mktemp("mlflow_engines"))


def same(got: Any, want: Any) -> None:
    """Numbers to float32's digits (XGBoost answers float32), row by row."""
    np.testing.assert_allclose(np.asarray([np.asarray(v, dtype=float) for v in got]),
                               np.asarray(want, dtype=float), rtol=1e-6)


def own(folders: dict[str, Path], name: str) -> Any:
    """MLflow's answer for the model's rows, one value (or list) per row."""
    rows, _, _ = MODELS[name]
    answer = reference(folders[name], frame(rows))
    return [row["a"] for row in answer] if name == "custom" else answer


@pytest.mark.parametrize("name", list(MODELS))
def test_spark_answers_as_spark_udf(folders: dict[str, Path], spark: Any, name: str) -> None:
    """The default output columns are those the model's own ``predict`` answers, each row's
    value equal to ``spark_udf``'s on the same Spark table."""
    import mlflow.pyfunc

    from flask_predict.engines import spark as on_spark

    rows, result_type, column = MODELS[name]
    table = spark.createDataFrame(frame(rows).assign(row=range(len(rows))))
    ours = on_spark.predict(table, str(folders[name]), keep=["row"]).toPandas()
    assert list(ours.columns) == ["row", column]
    udf = mlflow.pyfunc.spark_udf(spark, str(folders[name]), result_type=result_type,
                                  env_manager="local")
    theirs = table.withColumn("mlflow", udf(*frame(rows).columns)).toPandas()
    ours, theirs = ours.sort_values("row"), theirs.sort_values("row")
    same(list(ours[column]), list(theirs["mlflow"]))


@pytest.mark.parametrize("name", list(MODELS))
def test_dask(folders: dict[str, Path], dask_client: Any, name: str) -> None:
    import dask.dataframe as dd

    from flask_predict.engines import dask_frames

    rows, _, column = MODELS[name]
    scored = dask_frames.predict(dd.from_pandas(frame(rows), npartitions=2),
                                 str(folders[name])).compute()
    same(list(scored[column]), own(folders, name))


@pytest.mark.parametrize("name", list(MODELS))
def test_ray_data(folders: dict[str, Path], ray: Any, name: str) -> None:
    from flask_predict.engines.ray_data import ScoreBatches

    rows, _, column = MODELS[name]
    scored = ray.data.from_pandas(frame(rows)).map_batches(
        ScoreBatches, fn_constructor_kwargs={"path": str(folders[name])},
        batch_format="pandas", concurrency=1, num_cpus=0.5).to_pandas()
    same(list(scored[column]), own(folders, name))


@pytest.mark.parametrize("name", list(MODELS))
def test_the_python_api_takes_a_dataframe(folders: dict[str, Path], name: str) -> None:
    """A DataFrame with the signature's columns, by name (a lone column too)."""
    rows, _, column = MODELS[name]
    with Model.load(folders[name]) as model:
        assert model.default_outputs == [column]
        same(list(model.predict(frame(rows), [column])[column]), own(folders, name))
        if name == "custom":
            lone = model.predict(frame(rows)[["a"]], ["a"])["a"]
            same(list(lone), [2.0 * row["a"] for row in rows])


@pytest.mark.parametrize("name", ["sk_skops", "xgb"])
def test_a_batch_job_on_a_table(folders: dict[str, Path], tmp_path: Path, name: str) -> None:
    """A CSV table's rows as objects, as Vertex AI's batch prediction sends them."""
    rows, _, _ = MODELS[name]
    source = tmp_path / "rows.csv"
    frame(rows).to_csv(source, index=False)
    out = tmp_path / "out.jsonl"
    with Model.load(folders[name]) as model:
        summary = batch.run(model, batch.expand([str(source)]), str(out),
                            config=batch.InstanceConfig(instance_type=batch.OBJECT))
    assert summary.errors == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    same([line["prediction"] for line in lines], own(folders, name))
