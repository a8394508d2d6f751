"""``flask-predict check`` and ``flask-predict serve`` agree over a table of good and bad
model folders and config files: the same verdict (serve starts, or stops), and where it stops,
the same reason, word for word (check runs serve's own loading rules)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests import models
from tests.e2e.server import CliServer

pytestmark = pytest.mark.e2e

Case = Callable[[Path], list[str]]
"""Builds a case's models under a folder; returns what to give serve and check: a model's
base path (``--model_base_path``) or ``@FILE`` for a model config file."""


def flask_predict() -> str:
    script = shutil.which("flask-predict", path=os.path.dirname(sys.executable))
    assert script is not None, "flask-predict is not installed in this environment"
    return script


def config_file(root: Path, config: dict[str, object]) -> list[str]:
    path = root / "models.json"
    path.write_text(json.dumps({"models": config}))
    return [f"@{path}"]


def iris(root: Path) -> list[str]:
    return [str(models.train_iris(root / "iris"))]


def version_folder(root: Path) -> list[str]:
    return [str(models.train_iris(root / "iris") / "1")]


def files_without_version_folder(root: Path) -> list[str]:
    base = models.train_iris(root / "iris")
    shutil.move(base / "1" / "model.joblib", base / "model.joblib")
    shutil.rmtree(base / "1")
    return [str(base)]


def routine_named(root: Path, cls: str) -> list[str]:
    models.make_custom(root / "echo")
    return config_file(root, {"echo": {"base_path": "echo", "predictor": "custom",
                                       "class": cls}})


def routine_with_its_class(root: Path) -> list[str]:
    return routine_named(root, "predictor.EchoPredictor")


def routine_found_in_its_source(root: Path) -> list[str]:
    return [str(models.make_custom(root / "echo"))]


def helper_module_beside_a_joblib(root: Path) -> list[str]:
    """A predictor.py with no prediction class beside a model.joblib: scikit-learn's."""
    base = models.train_iris(root / "names")
    (base / "1" / "predictor.py").write_text("class Names:\n    pass\n")
    return [str(base)]


def routine_class_that_is_not_there(root: Path) -> list[str]:
    return routine_named(root, "predictor.Nope")


def corrupt_xgboost(root: Path) -> list[str]:
    (root / "loans" / "1").mkdir(parents=True)
    (root / "loans" / "1" / "model.json").write_text('{"learner": {"broken')
    return [str(root / "loans")]


def corrupt_pickle(root: Path) -> list[str]:
    (root / "iris" / "3").mkdir(parents=True)
    (root / "iris" / "3" / "model.joblib").write_bytes(b"not a pickle")
    return [str(root / "iris")]


def config_with_a_broken_model(root: Path) -> list[str]:
    models.train_iris(root / "iris")
    corrupt_xgboost(root)
    return config_file(root, {"iris": {"base_path": "iris"}, "loans": {"base_path": "loans"}})


def config_with_a_typo(root: Path) -> list[str]:
    models.train_iris(root / "iris")
    return config_file(root, {"iris": {"base_path": "iris", "version_polcy": {"all": {}}}})


def good_config(root: Path) -> list[str]:
    models.train_iris(root / "iris")
    models.train_xgboost_missing(root / "loans")
    return config_file(root, {"iris": {"base_path": "iris"}, "loans": {"base_path": "loans"}})


CASES: dict[str, tuple[Case, bool]] = {
    "base path": (iris, True),
    # a folder holding the model files themselves is its own version 1 (as Vertex AI and
    # SageMaker hand a container its model), named by a version folder or not
    "version folder": (version_folder, True),
    "files without a version folder": (files_without_version_folder, True),
    "custom routine with its class": (routine_with_its_class, True),
    "custom routine found in its source": (routine_found_in_its_source, True),
    "a helper predictor.py beside a joblib": (helper_module_beside_a_joblib, True),
    "custom routine, a class not there": (routine_class_that_is_not_there, False),
    "corrupt XGBoost model": (corrupt_xgboost, False),
    "corrupt pickle": (corrupt_pickle, False),
    "config file, a model broken": (config_with_a_broken_model, False),
    "config file, a typo": (config_with_a_typo, False),
    "config file": (good_config, True),
}


def serve_flags(target: str) -> list[str]:
    if target.startswith("@"):
        return ["--model_config_file", target[1:]]
    return ["--model_name", os.path.basename(target), "--model_base_path", target]


@pytest.mark.parametrize("name", list(CASES))
def test_check_and_serve_agree(name: str, tmp_path: Path) -> None:
    build, starts = CASES[name]
    [target] = build(tmp_path / "models")
    checked = subprocess.run([flask_predict(), "check", target.lstrip("@"), "--json"],
                             capture_output=True, text=True, timeout=300)
    report = json.loads(checked.stdout)
    server = CliServer(flask_predict(), [*serve_flags(target), "--bind", "127.0.0.1:{port}"],
                       tmp_path, workers=1, log_path=tmp_path / "serve.log")
    try:
        server.start()
        served = True
    except RuntimeError:
        served = False
    finally:
        server.stop()
    log = server.log_text()
    assert report["starts"] is served is starts, (report, log)
    assert checked.returncode == (0 if starts else 1)
    if not starts:
        assert report["stop"] and report["stop"] in log, (report["stop"], log)
