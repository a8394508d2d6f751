"""A custom predictor that declares its signature: metadata says it, protocols decode by it.

The demo's ``IrisNames`` declares 4 floats in and a class name out; without a declaration
the generic form (``instances`` BYTES in, ``predictions`` BYTES out) remains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict
from flask_predict.models.demo import make_iris_names
from flask_predict_custom import CustomPredictor
from tests.models import make_custom

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    root = tmp_path_factory.mktemp("declared")
    make_iris_names(root / "iris_names")
    make_custom(root / "echo")
    app = Flask("declared")
    app.config["PREDICT_POLL_SECONDS"] = 0
    app.config["PREDICT_MODELS"] = {
        "iris_names": {"base_path": str(root / "iris_names"), "predictor": "custom",
                       "class": "predictor.IrisNames"},
        "echo": {"base_path": str(root / "echo"), "predictor": "custom",
                 "class": "predictor.EchoPredictor"}}
    FlaskPredict(app)
    return app.test_client()


def test_v2_metadata_shows_the_declared_signature(client: FlaskClient) -> None:
    meta = client.get("/v2/models/iris_names").get_json()
    assert meta["inputs"] == [{"name": "features", "datatype": "FP64", "shape": [-1, 4]}]
    assert meta["outputs"] == [{"name": "species", "datatype": "BYTES", "shape": [-1]}]


def test_tfserving_metadata_shows_the_declared_signature(client: FlaskClient) -> None:
    sig = client.get("/v1/models/iris_names/metadata").get_json()[
        "metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["features"]["dtype"] == "DT_DOUBLE"
    assert [d["size"] for d in sig["inputs"]["features"]["tensor_shape"]["dim"]] == ["-1", "4"]
    assert sig["outputs"]["species"]["dtype"] == "DT_STRING"


def test_without_a_declaration_the_generic_form_remains(client: FlaskClient) -> None:
    meta = client.get("/v2/models/echo").get_json()
    assert meta["inputs"] == [{"name": "instances", "datatype": "BYTES", "shape": [-1]}]
    assert meta["outputs"] == [{"name": "predictions", "datatype": "BYTES", "shape": [-1]}]


def test_v2_infer_decodes_by_the_declaration(client: FlaskClient) -> None:
    got = client.post("/v2/models/iris_names/infer", json={"inputs": [
        {"name": "features", "datatype": "FP64", "shape": [2, 4],
         "data": [v for row in ROWS for v in row]}]})
    assert got.status_code == 200, got.data
    (output,) = got.get_json()["outputs"]
    assert output["name"] == "species" and output["data"] == ["setosa", "virginica"]
    wrong = client.post("/v2/models/iris_names/infer", json={"inputs": [
        {"name": "features", "datatype": "FP64", "shape": [1, 3], "data": [1, 2, 3]}]})
    assert wrong.status_code == 400 and "expected shape [-1, 4]" in wrong.get_json()["error"]


def test_tfserving_predict_decodes_by_the_declaration(client: FlaskClient) -> None:
    got = client.post("/v1/models/iris_names:predict", json={"instances": ROWS})
    assert got.get_json() == {"predictions": ["setosa", "virginica"]}
    bad = client.post("/v1/models/iris_names:predict", json={"instances": [["a", 1, 2, 3]]})
    assert bad.status_code == 400
    assert 'JSON Value: "a" Type: String is not of expected type: double' in \
        bad.get_json()["error"]


def test_ai_platform_still_hands_over_the_json(client: FlaskClient) -> None:
    got = client.post("/v1/projects/p/models/iris_names:predict",
                      json={"instances": ROWS, "probabilities": True})
    assert len(got.get_json()["predictions"][0]) == 3


@pytest.mark.parametrize("declared, message", [
    ({"inputs": []}, "'inputs' and 'outputs'"),
    ({"inputs": [{"name": "x"}], "outputs": [{"name": "y"}], "other": 1}, "'inputs' and"),
    ({"inputs": [{"name": "x", "datatype": "FLOAT"}], "outputs": [{"name": "y"}]},
     "unknown datatype 'FLOAT'"),
    ({"inputs": [{"name": "x", "shape": [2, "4"]}], "outputs": [{"name": "y"}]}, "'shape'"),
    ({"inputs": [{"datatype": "FP32"}], "outputs": [{"name": "y"}]}, "needs a 'name'"),
    ({"inputs": [{"name": "x"}, {"name": "x"}], "outputs": [{"name": "y"}]}, "unique"),
])
def test_a_wrong_declaration_stops_the_load(tmp_path: Path, declared: Any,
                                            message: str) -> None:
    (tmp_path / "declares.py").write_text(
        "class Declares:\n"
        f"    signature = {declared!r}\n"
        "    @classmethod\n"
        "    def from_path(cls, model_dir):\n"
        "        return cls()\n"
        "    def predict(self, instances):\n"
        "        return instances\n")
    with pytest.raises(TypeError, match=message):
        CustomPredictor.from_path(str(tmp_path), **{"class": "declares.Declares"})


def test_several_declared_outputs_come_from_objects(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(
        "class Two:\n"
        "    def signature(self):\n"
        "        return {'inputs': [{'name': 'x', 'datatype': 'FP32', 'shape': [-1]}],\n"
        "                'outputs': [{'name': 'double', 'datatype': 'FP32', 'shape': [-1]},\n"
        "                            {'name': 'label', 'datatype': 'BYTES', 'shape': [-1]}]}\n"
        "    @classmethod\n"
        "    def from_path(cls, model_dir):\n"
        "        return cls()\n"
        "    def predict(self, instances):\n"
        "        return [{'double': 2 * x, 'label': str(x)} for x in instances]\n")
    app = Flask("two")
    app.config.update(PREDICT_POLL_SECONDS=0, PREDICT_MODELS={"two": {
        "base_path": str(tmp_path.parent), "predictor": "custom", "class": "two.Two"}})
    (tmp_path.parent / "1").mkdir(exist_ok=True)
    (tmp_path.parent / "1" / "two.py").write_text((tmp_path / "two.py").read_text())
    FlaskPredict(app)
    got = app.test_client().post("/v2/models/two/infer", json={"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [2], "data": [0.1, 2]}]}).get_json()
    outputs = {o["name"]: o for o in got["outputs"]}
    assert outputs["double"]["datatype"] == "FP32" and outputs["double"]["data"] == [0.2, 4.0]
    assert outputs["label"]["data"] == ["0.1", "2.0"]
