"""A Keras model saved by ``mlflow.keras.save_model`` (its ``keras`` flavor: ``data/model.keras``)
and the same model by ``mlflow.tensorflow.save_model``, each loaded by the TensorFlow plugin
without mlflow; answers equal ``mlflow.pyfunc``'s over V2 and TF Serving."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flask_predict.models.plugins import detect_predictor

from .models import pinned, reference

pytest.importorskip("mlflow")
pytest.importorskip("keras")
pytestmark = [pytest.mark.tensorflow,
              pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

X = np.array([[0.1, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=np.float32)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import keras
        import mlflow.keras
        import mlflow.tensorflow
        from mlflow.models import infer_signature

        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,), name="x"),
                                  keras.layers.Dense(2, activation="softmax")])
        root = tmp_path_factory.mktemp("mlflow_keras")
        signature = infer_signature(X, model.predict(X, verbose=0))
        mlflow.keras.save_model(model, str(root / "keras"), signature=signature,
                                pip_requirements=pinned("keras"))
        mlflow.tensorflow.save_model(model, str(root / "tf"), signature=signature,
                                     pip_requirements=pinned("tensorflow"))
    return {"keras": root / "keras", "tf": root / "tf"}


def test_keras_flavors_answer_as_mlflow(folders: dict[str, Path], make_app: Any) -> None:
    client = make_app({name: {"base_path": str(path)} for name, path in folders.items()}
                      ).test_client()
    for name, path in folders.items():
        assert detect_predictor(str(path), {}) == "tensorflow"
        want = np.asarray(reference(path, X)).ravel().tolist()
        meta = client.get(f"/v2/models/{name}").get_json()
        (spec,) = meta["inputs"]
        v2 = client.post(f"/v2/models/{name}/infer", json={"inputs": [
            {"name": spec["name"], "datatype": "FP32", "shape": [2, 3],
             "data": X.ravel().tolist()}]})
        assert v2.status_code == 200, v2.get_json()
        assert np.allclose(v2.get_json()["outputs"][0]["data"], want, rtol=1e-5, atol=1e-6)
        tfs = client.post(f"/v1/models/{name}:predict", json={"instances": X.tolist()})
        assert tfs.status_code == 200, tfs.get_json()
        assert np.allclose(np.asarray(tfs.get_json()["predictions"]).ravel(), want,
                           rtol=1e-5, atol=1e-6)
