"""MLmodel files read without mlflow: flavor choice, the plugin named, requirements."""

from __future__ import annotations

from pathlib import Path

import pytest

from flask_predict import ConfigError
from flask_predict.models.mlmodel import (choose_flavor, mlflow_plugin, read_mlmodel,
                                          requirements, unmet_requirements)

MLMODEL = """\
flavors:
  python_function:
    loader_module: mlflow.xgboost
    data: model.ubj
    predict_fn: predict_proba
  sklearn:
    pickled_model: model.pkl
  xgboost:
    data: model.ubj
signature:
  inputs: '[{"type": "double", "name": "a", "required": true}]'
"""


def write(tmp_path: Path, text: str = MLMODEL) -> Path:
    (tmp_path / "MLmodel").write_text(text)
    return tmp_path


def test_the_flavor_python_function_loads_with_comes_first(tmp_path: Path) -> None:
    model = read_mlmodel(str(write(tmp_path)))
    assert model.loader_flavor == "xgboost" and model.predict_fn == "predict_proba"
    served = {"sklearn": "sklearn", "xgboost": "xgboost"}
    assert choose_flavor(model, served) == ("xgboost", "xgboost")
    assert choose_flavor(model, {"sklearn": "sklearn"}) == ("sklearn", "sklearn")
    assert choose_flavor(model, {}) is None
    assert model.outputs(None) == ("predict_proba",) and model.outputs(["predict"]) == ["predict"]


def test_python_function_goes_to_the_mlflow_plugin_or_names_its_extra(tmp_path: Path) -> None:
    model = read_mlmodel(str(write(tmp_path, "flavors:\n  python_function:\n"
                                             "    loader_module: mlflow.pyfunc.model\n")))
    assert mlflow_plugin(model, {}, {"mlflow", "sklearn"}) == "mlflow"
    with pytest.raises(ConfigError, match=r'pip install "flask-predict\[mlflow\]"'):
        mlflow_plugin(model, {}, {"sklearn"})
    only_native = read_mlmodel(str(write(tmp_path, "flavors:\n  spacy:\n    data: x\n")))
    with pytest.raises(ConfigError, match="no python_function flavor"):
        mlflow_plugin(only_native, {}, {"mlflow"})


def test_requirements_from_requirements_txt_or_conda_yaml(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "conda.yaml").write_text(
        "dependencies:\n- python=3.11\n- pip:\n  - mlflow==3.1\n  - numpy==0.0.1\n"
        "  - absent-package-xyz\n")
    assert requirements(str(tmp_path)) == [("mlflow", "3.1"), ("numpy", "0.0.1"),
                                           ("absent-package-xyz", None)]
    unmet = unmet_requirements(str(tmp_path))
    assert unmet[0].startswith("numpy==0.0.1 (installed: ")
    assert unmet[1:] == ["absent-package-xyz (not installed)"]  # mlflow itself never counts
    (tmp_path / "requirements.txt").write_text(
        "# comment\n-r other.txt\nnumpy\nscikit-learn[alldeps] == 9.9 ; python_version>'3'\n"
        "git+https://example.org/x.git\n")
    assert requirements(str(tmp_path)) == [("numpy", None), ("scikit-learn", "9.9")]


def test_broken_mlmodel_files(tmp_path: Path) -> None:
    from flask_predict.errors import UnreadableModel

    for text, words in (("flavors: [", "not readable YAML"), ("- a list", "names no flavor"),
                        ("flavors: {}", "names no flavor"), ("!!python/object:os.system {}",
                                                              "not readable YAML")):
        with pytest.raises(UnreadableModel, match=words):
            read_mlmodel(str(write(tmp_path, text)))
