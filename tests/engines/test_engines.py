"""The same models on Spark (local mode), Ray Data, Dask (a distributed LocalCluster) and
Ray Serve, each answer compared with a real gunicorn server's over REST: a scikit-learn
Pipeline on a DataFrame, an XGBoost model with missing values and categories, a TensorFlow
SavedModel and Google's custom routine tutorial.

Each engine starts once for the module (`conftest.py`), small."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import pytest
import requests

from flask_predict.models.demo import export_half_plus_two
from tests.e2e.server import GunicornServer, free_port
from tests.engines import ENGINE_MARKS
from tests.routines import IRIS_ROWS, make_tutorial
from tests.tabular_models import PEOPLE_ROWS, SHOP_ROWS, frame, train_people, train_shops

pytestmark = ENGINE_MARKS

MODELS = {
    # name: (the frame each engine scores, the outputs asked, the same rows as instances)
    "people": (frame(PEOPLE_ROWS), ["predict"], PEOPLE_ROWS),
    "shops": (frame(SHOP_ROWS).astype({"size": float}), ["predict"], SHOP_ROWS),
    "half": (pd.DataFrame({"x": np.array([1.0, 3.0, -0.5], dtype=np.float32)}), None,
             [1.0, 3.0, -0.5]),
    "routine": (pd.DataFrame(IRIS_ROWS, columns=["a", "b", "c", "d"]), None, IRIS_ROWS),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The models, and what a gunicorn server answers for each on AI Platform's route."""
    root = tmp_path_factory.mktemp("engine_models")
    train_people(root / "people")
    train_shops(root / "shops")
    export_half_plus_two(root / "half")
    make_tutorial(root / "routine" / "1")
    config = {name: {"base_path": str(root / name)} for name in MODELS}
    answers = {}
    with GunicornServer(config, workers=1, timeout=600) as server:
        for name, (_, _, instances) in MODELS.items():
            got = requests.post(f"{server.url}/v1/projects/p/models/{name}:predict",
                                json={"instances": instances}, timeout=60)
            assert got.status_code == 200, got.text
            answers[name] = got.json()["predictions"]
    yield root, answers


def same(column: list[Any], predictions: list[Any]) -> None:
    """An engine's output column equals the server's predictions: text exactly, numbers to
    float32's digits (XGBoost and TensorFlow answer float32)."""
    assert len(column) == len(predictions)
    if isinstance(predictions[0], str):
        assert list(column) == predictions
    else:
        np.testing.assert_allclose(np.asarray(column, dtype=float), predictions, rtol=1e-6)


def output_of(name: str, scored: Any) -> list[Any]:
    outputs = MODELS[name][1]
    column = outputs[0] if outputs else {"half": "y", "routine": "predictions"}[name]
    return list(scored[column])


# --- Spark --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_spark(served: tuple[Path, dict[str, Any]], spark: Any, name: str) -> None:
    from flask_predict.engines import spark as on_spark

    root, answers = served
    rows, outputs, _ = MODELS[name]
    data = spark.createDataFrame(rows.assign(row=range(len(rows))))
    scored = on_spark.predict(data, str(root / name), outputs, keep=["row"]).toPandas()
    scored = scored.sort_values("row")
    assert scored["row"].tolist() == list(range(len(rows)))
    same(output_of(name, scored), answers[name])


# --- Ray Data and Ray Serve ---------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_ray_data(served: tuple[Path, dict[str, Any]], ray: Any, name: str) -> None:
    from flask_predict.engines.ray_data import ScoreBatches

    root, answers = served
    rows, outputs, _ = MODELS[name]
    dataset = ray.data.from_pandas(rows)
    scored = dataset.map_batches(ScoreBatches, fn_constructor_kwargs={
        "path": str(root / name), "outputs": outputs}, batch_format="pandas", concurrency=1,
        num_cpus=0.5).to_pandas()
    same(output_of(name, scored), answers[name])


def test_ray_serve_two_replicas(served: tuple[Path, dict[str, Any]], ray: Any) -> None:
    """Two replicas answer AI Platform's and V2's routes as the server does."""
    from ray import serve

    from flask_predict.engines.ray_serve import deployment

    root, answers = served
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        models = {name: {"base_path": str(root / name)} for name in ("people", "routine")}
        serve.run(deployment(models, replicas=2, ray_actor_options={"num_cpus": 0.25}),
                  route_prefix="/", name="flask_predict")
        status = serve.status().applications["flask_predict"].deployments["flask_predict"]
        assert status.replica_states.get("RUNNING") == 2
        url = f"http://127.0.0.1:{port}"
        for _ in range(4):
            got = requests.post(f"{url}/v1/projects/p/models/people:predict",
                                json={"instances": PEOPLE_ROWS}, timeout=60)
            assert got.status_code == 200 and got.json()["predictions"] == answers["people"]
        v2 = requests.post(f"{url}/v2/models/routine/infer", timeout=60, json={"inputs": [
            {"name": "instances", "datatype": "FP64", "shape": [3, 4],
             "data": sum(IRIS_ROWS, [])}]})
        assert v2.status_code == 200, v2.text
        assert v2.json()["outputs"][0]["data"] == answers["routine"]
        bad = requests.post(f"{url}/v2/models/people/infer", json={"inputs": []}, timeout=60)
        assert bad.status_code == 400 and "error" in bad.json()
    finally:
        serve.shutdown()


# --- Dask ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_dask(served: tuple[Path, dict[str, Any]], dask_client: Any, name: str) -> None:
    import dask.dataframe as dd

    from flask_predict.engines import dask_frames

    root, answers = served
    rows, outputs, _ = MODELS[name]
    data = dd.from_pandas(rows, npartitions=2)
    scored = dask_frames.predict(data, str(root / name), outputs).compute()
    same(output_of(name, scored), answers[name])
