"""One app serving TF Serving's test models, a TF2 model exported here, two versions of one
model with labels, and the session's scikit-learn, XGBoost and custom models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.tf_models import copy_version, export_multi

pytest.importorskip("flask_predict_tensorflow")


@pytest.fixture(scope="session")
def tf_root(tmp_path_factory: pytest.TempPathFactory, tfserving_models: Path) -> Path:
    root = tmp_path_factory.mktemp("tf_models")
    export_multi(root / "multi")
    copy_version(tfserving_models, "saved_model_half_plus_two_cpu", root / "versioned", 1)
    copy_version(tfserving_models, "saved_model_half_plus_three", root / "versioned", 2)
    return root


@pytest.fixture(scope="session")
def tf_models(tf_root: Path, tfserving_models: Path,
              model_config: dict[str, Any]) -> dict[str, Any]:
    """``PREDICT_MODELS`` of the TF Serving test app."""
    tfserving = tfserving_models
    return {
        **model_config,
        "half_plus_two": {"base_path": os.fspath(tfserving / "saved_model_half_plus_two_cpu")},
        "half_plus_three": {"base_path": os.fspath(tfserving / "saved_model_half_plus_three")},
        "tf2": {"base_path": os.fspath(tfserving / "saved_model_half_plus_two_tf2_cpu")},
        "counter": {"base_path": os.fspath(tfserving / "saved_model_counter")},
        "multi": {"base_path": os.fspath(tf_root / "multi")},
        "versioned": {"base_path": os.fspath(tf_root / "versioned"),
                      "version_policy": {"all": {}},
                      "version_labels": {"stable": 1, "canary": 2}},
        "newest": {"base_path": os.fspath(tf_root / "versioned")},
    }


@pytest.fixture(scope="session")
def tf_app(make_app: Any, tf_models: dict[str, Any]) -> Flask:
    return make_app(tf_models, protocols=["tfserving"])


@pytest.fixture()
def tf_client(tf_app: Flask) -> FlaskClient:
    return tf_app.test_client()
