"""LightGBM, CatBoost and ONNX models through the AI Platform and V2 routes: the version
resource's ``framework``, V2's platform names, and an ONNX model of several outputs answered
on AI Platform's route, exported as skl2onnx's documentation and ours show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask

from flask_predict import FlaskPredict

pd = pytest.importorskip("pandas")
lightgbm = pytest.importorskip("lightgbm")
catboost = pytest.importorskip("catboost")
skl2onnx = pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")

FRAME = {"age": [31.0, 45.0, 22.0, 60.0, 38.0, 51.0], "income": [40000.5, 80000.0, 20000.0,
                                                                  55000.0, 61000.0, 30500.0]}
LABELS = [0, 1, 0, 1, 1, 0]


def onnx_pipeline(frame: Any) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(frame, LABELS)


def test_pandas_float64_columns_build_a_model_onnx_runtime_refuses() -> None:
    """Why docs/plugins/onnx.md casts to float32 before ``to_onnx``."""
    frame = pd.DataFrame(FRAME)
    pipeline = onnx_pipeline(frame)
    with pytest.raises(Exception, match="tensor\\(double\\)"):
        ort.InferenceSession(skl2onnx.to_onnx(pipeline, frame[:1]).SerializeToString())
    exported = skl2onnx.to_onnx(pipeline, frame.astype("float32")[:1])
    ort.InferenceSession(exported.SerializeToString())


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    root = tmp_path_factory.mktemp("frameworks")
    frame = pd.DataFrame(FRAME)
    for name in ("lightgbm", "catboost", "onnx"):
        (root / name / "1").mkdir(parents=True)
    lightgbm.LGBMClassifier(n_estimators=3, min_child_samples=1, verbose=-1).fit(
        frame, LABELS).booster_.save_model(root / "lightgbm" / "1" / "model.txt")
    catboost.CatBoostClassifier(iterations=3, verbose=False, allow_writing_files=False).fit(
        frame, LABELS).save_model(
        str(root / "catboost" / "1" / "model.cbm"))
    exported = skl2onnx.to_onnx(onnx_pipeline(frame), frame.astype("float32")[:1])
    (root / "onnx" / "1" / "model.onnx").write_bytes(exported.SerializeToString())
    app = Flask("frameworks")
    models: dict[str, Any] = {name: {"base_path": str(root / name)}
                              for name in ("lightgbm", "catboost", "onnx")}
    models["onnx_label"] = {"base_path": str(root / "onnx"), "outputs": ["output_label"]}
    app.config.update(PREDICT_POLL_SECONDS=0, PREDICT_MODELS=models)
    FlaskPredict(app)
    return app


@pytest.mark.parametrize("name", ["lightgbm", "catboost", "onnx"])
def test_version_resource_and_platform(app: Flask, name: str) -> None:
    client = app.test_client()
    version = client.get(f"/v1/projects/p/models/{name}/versions/1").get_json()
    assert version["framework"] == "FRAMEWORK_UNSPECIFIED"  # AI Platform's enum has none
    assert client.get(f"/v2/models/{name}").get_json()["platform"] == name


def test_an_onnx_model_of_several_outputs_on_ai_platform(app: Flask) -> None:
    client = app.test_client()
    body = {"instances": [{"age": [31.0], "income": [40000.5]},
                          {"age": [60.0], "income": [55000.0]}]}
    answer = client.post("/v1/projects/p/models/onnx:predict", json=body)
    assert answer.status_code == 200, answer.get_json()
    predictions = answer.get_json()["predictions"]
    assert len(predictions) == 2
    for row in predictions:  # one object per instance, keyed by output name
        assert set(row) == {"output_label", "output_probability"}
        assert row["output_label"] in (0, 1)
        assert np.isclose(sum(row["output_probability"]), 1.0, atol=1e-6)
    # the outputs model setting narrows the answer to one output, answered bare
    one = client.post("/v1/projects/p/models/onnx_label:predict", json=body)
    assert one.get_json() == {"predictions": [row["output_label"] for row in predictions]}
