"""The complete plugin in docs/plugins.md, run as written over all four protocols, on a
linear classifier trained here; and its pyproject.toml, built into a wheel as written from a
folder that holds other folders too."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from flask import Flask
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from flask_predict import FlaskPredict
from tests.docs.examples import ROOT, blocks

FIRST_LINE = "# flask_predict_linear/__init__.py"
MANIFEST_LINE = "# flask_predict_linear/manifest.py"
PYPROJECT_LINE = "# pyproject.toml"
CLASSES = ["setosa", "versicolor", "virginica"]
ROW = [5.1, 3.5, 1.4, 0.2]


def page_block(info: str, first_line: str) -> str:
    """The one code block of the page tagged *info* that starts with *first_line*."""
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    (code,) = [b.text for b in blocks(page) if b.info == info and
               b.text.startswith(first_line)]
    return code


def plugin_module(tmp_path: Path) -> ModuleType:
    """The page's plugin code block, imported as the module it says it is."""
    path = tmp_path / "flask_predict_linear.py"
    path.write_text(page_block("python", FIRST_LINE), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("flask_predict_linear", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    root = tmp_path_factory.mktemp("linear")
    x, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=1000).fit(x, y)
    (root / "species" / "1").mkdir(parents=True)
    np.savez(root / "species" / "1" / "model.npz", weights=model.coef_.T,
             bias=model.intercept_, classes=np.array(CLASSES))
    predict = FlaskPredict()
    predict.register_predictor("linear", plugin_module(root).LinearPredictor)
    app = Flask(__name__)
    app.config.update(PREDICT_MODELS={"species": {"base_path": str(root / "species"),
                                                  "predictor": "linear"}},
                      PREDICT_POLL_SECONDS=0)
    predict.init_app(app)
    return app


def post(app: Flask, url: str, body: Any) -> Any:
    answer = app.test_client().post(url, json=body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.get_json()


def test_every_protocol(app: Flask) -> None:
    rows = post(app, "/v1/projects/p/models/species:predict", {"instances": [ROW]})
    assert rows["predictions"][0]["label"] == "setosa"
    assert len(rows["predictions"][0]["scores"]) == 3
    tfserving = post(app, "/v1/models/species:predict", {"instances": [ROW]})
    assert tfserving["predictions"][0]["label"] == "setosa"
    # float32 printed as its shortest text here, as its exact double by AI Platform
    assert tfserving["predictions"][0]["scores"] == pytest.approx(
        rows["predictions"][0]["scores"], rel=1e-6)
    results = post(app, "/v1/models/species:classify", {"examples": [{"x": ROW}]})["results"]
    assert [label for label, _ in results[0]] == CLASSES
    assert max(results[0], key=lambda pair: pair[1])[0] == "setosa"
    v2 = post(app, "/v2/models/species/infer", {"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [1, 4], "data": ROW}]})
    outputs = {o["name"]: o for o in v2["outputs"]}
    assert outputs["label"] == {"name": "label", "datatype": "BYTES", "shape": [1],
                                "data": ["setosa"]}
    assert outputs["scores"]["datatype"] == "FP32"
    grps = post(app, "/grps/v1/infer/predict", {"gtensors": {"tensors": [
        {"dtype": "DT_FLOAT32", "shape": [1, 4], "flat_float32": ROW}]}})
    tensors = {t["name"]: t for t in grps["gtensors"]["tensors"]}
    assert tensors["label"]["flat_string"] == ["setosa"]


def test_metadata_and_errors(app: Flask) -> None:
    client = app.test_client()
    meta = client.get("/v2/models/species").get_json()
    assert meta["platform"] == "linear"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
    answer = client.post("/v1/models/species:predict", json={"instances": [[1.0, 2.0]]})
    assert answer.status_code == 400
    assert answer.get_json() == {"error": "input 'x': expected shape [-1, 4], got [1, 2]"}


def test_the_pyproject_builds_beside_other_folders(tmp_path: Path) -> None:
    """The page's three files laid out as it says, beside a models folder, a notebooks folder
    and an earlier build's leftovers: the wheel holds the one package and both entry points."""
    project = tmp_path / "flask-predict-linear"
    package = project / "flask_predict_linear"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(page_block("toml", PYPROJECT_LINE))
    (package / "__init__.py").write_text(page_block("python", FIRST_LINE))
    (package / "manifest.py").write_text(page_block("python", MANIFEST_LINE))
    for folder in ("models/species/1", "notebooks", "build/lib"):
        (project / folder).mkdir(parents=True)
    (project / "models" / "species" / "1" / "model.npz").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # without build isolation: this environment's setuptools, nothing downloaded
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "--wheel-dir", str(tmp_path / "dist"),
                            str(project)], capture_output=True, text=True, env=env,
                           timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        points = archive.read("flask_predict_linear-1.0.0.dist-info/entry_points.txt").decode()
    assert {name.split("/")[0] for name in names} == {"flask_predict_linear",
                                                       "flask_predict_linear-1.0.0.dist-info"}
    assert {"flask_predict_linear/__init__.py", "flask_predict_linear/manifest.py"} <= set(names)
    assert "[flask_predict.predictors]\nlinear = flask_predict_linear:LinearPredictor" in points
    assert ("[flask_predict.manifests]\nlinear = flask_predict_linear.manifest:MANIFEST"
            in points)
