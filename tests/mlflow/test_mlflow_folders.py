"""MLflow model folders served as saved: each native flavor loaded by its plugin without
mlflow, anything else through ``mlflow.pyfunc``; the answers those of
``mlflow.pyfunc.load_model(path).predict`` on the same input, over AI Platform, V2 and
TF Serving routes."""

from __future__ import annotations

import json
import logging
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from flask_predict.models.mlmodel import read_mlmodel, unmet_requirements
from flask_predict.models.plugins import detect_predictor

from .models import NUMBERS, ROWS, frame, reference, save_all

pytest.importorskip("mlflow")
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

NATIVE = {"sk_skops": "sklearn", "sk_pickle": "sklearn", "sk_cloudpickle": "sklearn",
          "sk_proba": "sklearn", "xgb": "xgboost", "xgb_optional": "xgboost", "lgb": "lightgbm", "cb": "catboost",
          "onnx": "onnx", "custom": "mlflow"}


@pytest.fixture(scope="session")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return save_all(tmp_path_factory.mktemp("mlflow"))


@pytest.fixture(scope="session")
def mlflow_client(folders: dict[str, Path], make_app: Any) -> FlaskClient:
    models = {name: {"base_path": str(path)} for name, path in folders.items()}
    return make_app(models).test_client()


def close(got: Any, want: Any) -> bool:
    """Equal to the digits a float32 or float64 computation guarantees (NaN equals NaN)."""
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            close(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        return isinstance(got, (int, float)) and (
            (math.isnan(want) and math.isnan(got)) or math.isclose(got, want, rel_tol=1e-6,
                                                                    abs_tol=1e-6))
    return bool(got == want)


def test_each_flavor_is_loaded_by_its_plugin(folders: dict[str, Path]) -> None:
    for name, plugin in NATIVE.items():
        assert detect_predictor(str(folders[name]), {}) == plugin, name


@pytest.mark.parametrize("name", ["sk_skops", "sk_pickle", "sk_cloudpickle", "sk_proba"])
def test_sklearn_answers_as_mlflow_over_ai_platform(mlflow_client: FlaskClient,
                                                    folders: dict[str, Path],
                                                    name: str) -> None:
    got = mlflow_client.post(f"/v1/projects/p/models/{name}:predict", json={"instances": ROWS})
    assert got.status_code == 200, got.get_json()
    want = reference(folders[name], frame(ROWS))
    assert close(got.get_json()["predictions"], want)
    if name == "sk_proba":  # pyfunc_predict_fn="predict_proba": probabilities, not labels
        assert all(len(row) == 2 for row in want)


@pytest.mark.parametrize("name", ["xgb", "lgb", "cb"])
def test_boosters_answer_as_mlflow(mlflow_client: FlaskClient, folders: dict[str, Path],
                                   name: str) -> None:
    body = json.dumps({"instances": NUMBERS})  # NaN: TF Serving's JSON
    got = mlflow_client.post(f"/v1/projects/p/models/{name}:predict", data=body,
                             content_type="application/json")
    assert got.status_code == 200, got.get_data(as_text=True)
    assert close(got.get_json()["predictions"], reference(folders[name], frame(NUMBERS)))


def test_tf_serving_and_v2_routes_answer_as_mlflow(mlflow_client: FlaskClient,
                                                   folders: dict[str, Path]) -> None:
    want = reference(folders["sk_skops"], frame(ROWS))
    tfs = mlflow_client.post("/v1/models/sk_skops:predict",
                             json={"inputs": {k: [r[k] for r in ROWS] for k in ROWS[0]}})
    assert tfs.status_code == 200, tfs.get_json()
    assert tfs.get_json()["outputs"]["predict"] == want
    inputs = [{"name": name, "datatype": datatype, "shape": [3], "data": [r[name] for r in ROWS]}
              for name, datatype in (("age", "FP64"), ("income", "FP64"), ("city", "BYTES"))]
    v2 = mlflow_client.post("/v2/models/sk_skops/infer",
                            json={"inputs": inputs, "outputs": [{"name": "predict"}]})
    assert v2.status_code == 200, v2.get_json()
    assert v2.get_json()["outputs"][0]["data"] == want
    x = [[0.5, 1.5], [2.0, -1.0]]
    onnx = mlflow_client.post("/v2/models/onnx/infer", json={"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": sum(x, [])}]})
    assert onnx.status_code == 200, onnx.get_json()
    import numpy as np

    want_onnx = reference(folders["onnx"], {"x": np.asarray(x, dtype=np.float32)})
    got_onnx = onnx.get_json()["outputs"][0]["data"]
    assert close(got_onnx, np.asarray(want_onnx["variable"]).ravel().tolist())


def test_a_custom_python_model_with_params_and_code_paths(mlflow_client: FlaskClient,
                                                          folders: dict[str, Path]) -> None:
    for params in (None, {"factor": 3.0}):
        body: dict[str, Any] = {"instances": NUMBERS}
        if params:
            body["parameters"] = params
        got = mlflow_client.post("/v1/projects/p/models/custom:predict",
                                 data=json.dumps(body), content_type="application/json")
        assert got.status_code == 200, got.get_data(as_text=True)
        assert close(got.get_json()["predictions"],
                     reference(folders["custom"], frame(NUMBERS), params))
    bad = mlflow_client.post("/v1/projects/p/models/custom:predict",
                             json={"instances": [{"a": 1.0, "b": 2.0}],
                                   "parameters": {"factor": "three"}})
    assert 400 <= bad.status_code < 500, bad.get_data(as_text=True)
    missing = mlflow_client.post("/v1/projects/p/models/custom:predict",
                                 json={"instances": [{"b": 2.0}]})
    assert 400 <= missing.status_code < 500, missing.get_data(as_text=True)
    assert "a" in missing.get_json()["error"]


def test_a_flat_mlflow_folder_is_version_1(folders: dict[str, Path], make_app: Any) -> None:
    app = make_app({"model": {"base_path": str(folders["sk_pickle"])}})
    got = app.test_client().post("/v1/projects/p/models/model:predict",
                                 json={"instances": ROWS})
    assert got.status_code == 200 and got.get_json()["predictions"] == reference(
        folders["sk_pickle"], frame(ROWS))


def test_a_numbered_version_folder_of_an_mlflow_model(folders: dict[str, Path],
                                                      tmp_path: Path, make_app: Any) -> None:
    shutil.copytree(folders["xgb"], tmp_path / "3")
    app = make_app({"model": {"base_path": str(tmp_path)}})
    got = app.test_client().get("/v1/models/model")
    assert got.get_json()["model_version_status"][0]["version"] == "3"


def test_native_loads_import_no_mlflow(folders: dict[str, Path]) -> None:
    import subprocess

    paths = [str(folders[name]) for name in ("sk_skops", "sk_cloudpickle", "xgb", "lgb", "cb")]
    code = ("import sys\n"
            "from flask_predict.models.loading import load_version\n"
            "from flask_predict.models.plugins import detect_predictor, load_predictor_class\n"
            f"for path in {paths!r}:\n"
            "    load_version(load_predictor_class(detect_predictor(path, {})), path, {})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'tensorflow')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_requirements_not_met_get_one_warning(folders: dict[str, Path], tmp_path: Path,
                                              make_app: Any,
                                              caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "model"
    shutil.copytree(folders["sk_pickle"], folder)
    lines = (folder / "requirements.txt").read_text().splitlines()
    (folder / "requirements.txt").write_text("\n".join(
        [line if not line.startswith("scikit-learn") else "scikit-learn==0.1.2" for line in lines]
        + ["no-such-package-here==1.0"]) + "\n")
    assert unmet_requirements(str(folder))[-2:] == [
        f"scikit-learn==0.1.2 (installed: {__import__('sklearn').__version__})",
        "no-such-package-here (not installed)"]
    with caplog.at_level(logging.WARNING, logger="flask_predict.models.loading"):
        make_app({"model": {"base_path": str(folder)}})
    warnings = [r.getMessage() for r in caplog.records if "saved with packages" in r.getMessage()]
    assert len(warnings) == 1 and "scikit-learn==0.1.2" in warnings[0]
    assert "no-such-package-here" in warnings[0]


def test_mlmodel_file_outside_and_broken(tmp_path: Path, folders: dict[str, Path]) -> None:
    from flask_predict.errors import UnreadableModel

    model = read_mlmodel(str(folders["xgb"]))
    with pytest.raises(UnreadableModel, match="outside the model folder"):
        model.file("../../etc/passwd")
    (tmp_path / "MLmodel").write_text("flavors: [unclosed")
    with pytest.raises(UnreadableModel, match="not readable YAML"):
        read_mlmodel(str(tmp_path))


def test_the_signature_is_the_metadata(mlflow_client: FlaskClient) -> None:
    xgb = mlflow_client.get("/v2/models/xgb").get_json()
    assert [(i["name"], i["datatype"]) for i in xgb["inputs"]] == [("a", "FP64"), ("b", "FP64")]
    sk = mlflow_client.get("/v2/models/sk_skops").get_json()
    assert [(i["name"], i["datatype"]) for i in sk["inputs"]] == [
        ("age", "FP64"), ("income", "FP64"), ("city", "BYTES")]
    custom = mlflow_client.get("/v2/models/custom").get_json()
    assert [i["name"] for i in custom["inputs"]] == ["a", "b"]
    tfs = mlflow_client.get("/v1/models/xgb/metadata").get_json()
    inputs = tfs["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
    assert inputs["a"]["dtype"] == "DT_DOUBLE"


def test_columns_by_name_extras_ignored_optional_absent(mlflow_client: FlaskClient,
                                                       folders: dict[str, Path]) -> None:
    shuffled = [{"city": r["city"], "note": "ignored", "income": r["income"], "age": r["age"]}
                for r in ROWS]
    got = mlflow_client.post("/v1/projects/p/models/sk_skops:predict",
                             json={"instances": shuffled})
    assert got.status_code == 200, got.get_json()
    assert got.get_json()["predictions"] == reference(folders["sk_skops"], frame(ROWS))
    only_a = [{"a": row["a"]} for row in NUMBERS]
    got = mlflow_client.post("/v1/projects/p/models/xgb_optional:predict",
                             json={"instances": only_a})
    assert got.status_code == 200, got.get_json()
    nan_b = frame([{"a": row["a"], "b": float("nan")} for row in NUMBERS])
    assert close(got.get_json()["predictions"], reference(folders["xgb"], nan_b))
    assert mlflow_client.get("/v2/models/xgb_optional").get_json()["inputs"][1]["name"] == "b"


@pytest.mark.parametrize("name,body,words", [
    ("xgb", {"instances": [{"b": 1.0}]}, "'a'"),
    ("xgb", {"instances": [{"a": "one", "b": 1.0}]}, "'a'"),
    ("sk_skops", {"instances": [{"age": 31.0, "income": 4.0, "city": 7}]}, "'city'"),
    ("sk_skops", {"instances": [{"age": 31.0, "city": "paris"}]}, "'income'"),
    ("custom", {"instances": [{"a": 1.0, "b": 1.0}], "parameters": {"factor": [1]}}, "factor"),
])
def test_bad_input_is_answered_400_naming_it(mlflow_client: FlaskClient, name: str,
                                             body: dict[str, Any], words: str) -> None:
    got = mlflow_client.post(f"/v1/projects/p/models/{name}:predict", json=body)
    assert got.status_code == 400, got.get_data(as_text=True)
    assert words in got.get_json()["error"]
    v2 = mlflow_client.post(f"/v2/models/{name}/infer", json={"inputs": [
        {"name": "a", "datatype": "BYTES", "shape": [1], "data": ["x"]}]})
    assert 400 <= v2.status_code < 500, v2.get_data(as_text=True)


def test_a_float_into_a_long_column_is_refused(folders: dict[str, Path], make_app: Any,
                                               tmp_path: Path) -> None:
    """MLflow casts only safely: an integer into a double column, never a float into a
    long one."""
    from sklearn.linear_model import LogisticRegression

    import mlflow
    from mlflow.models import infer_signature

    table = frame([{"n": i, "x": i / 2} for i in range(10)])
    model = LogisticRegression().fit(table, [i % 2 for i in range(10)])
    path = tmp_path / "longs"
    mlflow.sklearn.save_model(model, str(path), serialization_format="pickle",
                              pip_requirements=[], signature=infer_signature(table))
    client = make_app({"m": {"base_path": str(path)}}).test_client()
    ok = client.post("/v1/projects/p/models/m:predict", json={"instances": [{"n": 3, "x": 1}]})
    assert ok.status_code == 200, ok.get_json()
    assert ok.get_json()["predictions"] == reference(path, frame([{"n": 3, "x": 1.0}]))
    bad = client.post("/v1/projects/p/models/m:predict",
                      json={"instances": [{"n": 3.5, "x": 1.0}]})
    assert bad.status_code == 400 and "'n'" in bad.get_json()["error"]


def test_the_python_api_takes_mlflow_folders(folders: dict[str, Path]) -> None:
    from flask_predict.api import Model

    for name in ("sk_skops", "custom"):
        with Model.load(folders[name]) as model:
            assert model.version == 1
            got = model.predict_instances(ROWS if name == "sk_skops" else NUMBERS)
            want = reference(folders[name], frame(ROWS if name == "sk_skops" else NUMBERS))
            assert close(got, want), name


def test_a_model_naming_its_plugin(folders: dict[str, Path], make_app: Any) -> None:
    """Settings that name the plugin skip detection; the flavor's files are still read."""
    app = make_app({"m": {"base_path": str(folders["sk_pickle"]), "predictor": "sklearn"}})
    got = app.test_client().post("/v1/projects/p/models/m:predict", json={"instances": ROWS})
    assert got.status_code == 200, got.get_json()


def test_a_model_fitted_on_a_matrix_takes_the_signature_columns(make_app: Any,
                                                                 tmp_path: Path) -> None:
    """Fitted on numpy, saved with a DataFrame's signature: the columns, in the signature's
    order, are the model's matrix."""
    from sklearn.linear_model import LinearRegression

    import mlflow
    from mlflow.models import infer_signature

    table = frame([{"x": float(i), "y": float(i % 3)} for i in range(12)])
    model = LinearRegression().fit(table.to_numpy(), table["x"] * 2 - table["y"])
    path = tmp_path / "matrix"
    mlflow.sklearn.save_model(model, str(path), serialization_format="pickle",
                              pip_requirements=[], signature=infer_signature(table))
    client = make_app({"m": {"base_path": str(path)}}).test_client()
    rows = [{"y": 1.0, "x": 4.0}, {"x": 2.0, "y": 0.0}]
    got = client.post("/v1/projects/p/models/m:predict", json={"instances": rows})
    assert got.status_code == 200, got.get_json()
    assert close(got.get_json()["predictions"],
                 reference(path, frame(rows)))
    meta = client.get("/v2/models/m").get_json()
    assert [i["name"] for i in meta["inputs"]] == ["x", "y"]
