"""The demo models (``flask-predict demo DIR``; ``make serve`` serves them). Trained or
exported here, so no binary is ever committed.

Under *DIR*, in TF Serving's layout ``<model>/<version>/...``, with a model config file
``models.json``:

* ``iris``: a scikit-learn LogisticRegression on the iris data (``model.joblib``);
* ``loans``: an XGBoost model trained with missing values: a missing first feature (JSON
  ``NaN`` or ``null``) means *approve*; ``0.0`` is a real value (``model.json``);
* ``iris_names``: an AI Platform custom prediction routine (``predictor.IrisNames``) that
  answers class names, or probabilities when the request says ``"probabilities": true``;
* ``half_plus_two``: a TensorFlow SavedModel, ``y = 0.5 * x + 2`` (TF Serving's classic);
* ``churn``: a scikit-learn Pipeline fitted on a pandas DataFrame: ``age`` and ``income``
  scaled, ``city`` one-hot encoded (an unknown city refused), a LogisticRegression answering
  ``"stays"`` or ``"leaves"``.

A model whose framework or predictor plugin is not installed is left out, with a note that
names what to install.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import plugins

CUSTOM_ROUTINE = '''
"""An AI Platform custom prediction routine, as Google's own sample writes it."""
import os

import joblib

NAMES = ["setosa", "versicolor", "virginica"]


class IrisNames:
    # What it takes and returns, for V2 / TF Serving / grps metadata and their decoding:
    # rows of 4 floats in, one class name per row out.
    signature = {
        "inputs": [{"name": "features", "datatype": "FP64", "shape": [-1, 4]}],
        "outputs": [{"name": "species", "datatype": "BYTES", "shape": [-1]}],
    }

    def __init__(self, model):
        self._model = model

    @classmethod
    def from_path(cls, model_dir):
        return cls(joblib.load(os.path.join(model_dir, "model.joblib")))

    def predict(self, instances, **kwargs):
        if kwargs.get("probabilities"):
            return self._model.predict_proba(instances).tolist()
        return [NAMES[int(i)] for i in self._model.predict(instances)]
'''


def train_iris(base: Path, version: int = 1) -> Path:
    """A LogisticRegression on iris, saved as ``<base>/<version>/model.joblib``."""
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = load_iris(return_X_y=True)
    folder = base / str(version)
    folder.mkdir(parents=True)
    # fitted to the optimum, so that its answers stay the same from one scikit-learn, SciPy
    # or BLAS release to the next: Newton's method stops on the gradient (lbfgs stopped on
    # the loss's relative change, and answered 1e-6 apart on two installs); then rounded to
    # 9 decimals, past the optimum's last differences between installs (about 1e-12), so
    # that every digit of the documented answers is what the server prints
    model = LogisticRegression(solver="newton-cg", max_iter=1000, tol=1e-12).fit(x, y)
    model.coef_ = np.round(model.coef_, 9)
    model.intercept_ = np.round(model.intercept_, 9)
    joblib.dump(model, folder / "model.joblib")
    return base


def train_xgboost_missing(base: Path, version: int = 1, fmt: str = "json") -> Path:
    """A binary XGBoost Booster whose answer depends on whether feature 0 is *missing*:
    rows with feature 0 missing are positive, rows with feature 0 present (even 0.0) are not.
    """
    import xgboost as xgb

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    y = (rng.random(600) < 0.5).astype(int)
    x[y == 1, 0] = np.nan
    x[y == 0, 0] = rng.normal(size=(y == 0).sum()) * 0.01
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1},
                        xgb.DMatrix(x, label=y, missing=np.nan), num_boost_round=10)
    folder = base / str(version)
    folder.mkdir(parents=True)
    if fmt == "bst":  # what AI Platform calls model.bst: XGBoost's binary JSON
        (folder / "model.bst").write_bytes(booster.save_raw("ubj"))
    else:
        booster.save_model(folder / f"model.{fmt}")
    return base


def make_iris_names(base: Path, version: int = 1) -> Path:
    """The custom routine, shipped in the version folder beside the model it wraps."""
    train_iris(base, version)
    (base / str(version) / "predictor.py").write_text(textwrap.dedent(CUSTOM_ROUTINE))
    return base


def export_half_plus_two(base: Path, version: int = 1) -> Path:
    """A native TF2 SavedModel: ``serving_default`` takes ``x`` (float32, any length) and
    returns ``y = 0.5 * x + 2``."""
    import tensorflow as tf

    class HalfPlusTwo(tf.Module):  # type: ignore[misc]  # tf.Module is untyped
        @tf.function(  # type: ignore[untyped-decorator]  # tensorflow ships no hints
            input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": 0.5 * x + 2.0}

    module = HalfPlusTwo()
    tf.saved_model.save(module, str(base / str(version)),
                        signatures={"serving_default": module.serve})
    return base


def train_churn(base: Path, version: int = 1) -> Path:
    """A Pipeline of a ColumnTransformer and a LogisticRegression fitted on a DataFrame of
    numbers and text, saved as ``<base>/<version>/model.joblib``."""
    import joblib
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    customers = pd.DataFrame({
        "age": [23, 35, 47, 52, 61, 29, 44, 38, 57, 26, 33, 49],
        "income": [28_000.0, 52_000.0, 61_000.0, 39_000.0, 45_000.0, 31_000.0, 75_000.0,
                   58_000.0, 33_000.0, 42_000.0, 66_000.0, 36_000.0],
        "city": ["Paris", "London", "Rome", "Paris", "Rome", "London", "Paris", "Rome",
                 "London", "Paris", "London", "Rome"]})
    churned = ["leaves", "stays", "stays", "leaves", "stays", "leaves", "stays", "stays",
               "leaves", "leaves", "stays", "leaves"]
    model = Pipeline([
        ("columns", ColumnTransformer([("numbers", StandardScaler(), ["age", "income"]),
                                       ("city", OneHotEncoder(), ["city"])])),
        # fitted to the optimum, as iris is: the same answers from one release to the next
        ("classify", LogisticRegression(solver="newton-cg", tol=1e-12, max_iter=1000)),
    ]).fit(customers, churned)
    folder = base / str(version)
    folder.mkdir(parents=True)
    joblib.dump(model, folder / "model.joblib")
    return base


DEMO_MODELS: dict[str, tuple[Callable[[Path], Path], str, dict[str, Any]]] = {
    "iris": (train_iris, "sklearn", {}),
    "loans": (train_xgboost_missing, "xgboost", {}),
    "iris_names": (make_iris_names, "sklearn",
                   {"predictor": "custom", "class": "predictor.IrisNames"}),
    "half_plus_two": (export_half_plus_two, "tensorflow", {}),
    "churn": (train_churn, "sklearn", {}),
}
"""Model name -> (builder, the framework it needs, extra model settings)."""


def write_demo(out: Path, echo: Callable[[str], object] = print) -> dict[str, Any]:
    """Build the demo models under *out* (those already there are kept) and write
    ``models.json`` listing them. Returns the model config written."""
    out.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {}
    installed = set(plugins.installed_names())
    plugins.manifests()  # each plugin's package sets its framework's environment (log levels)
    for name, (build, framework, settings) in DEMO_MODELS.items():
        missing = _missing(framework, settings.get("predictor", framework), installed)
        if missing:
            echo(f"{name}: skipped ({missing})")
            continue
        if not (out / name).is_dir():
            partial = out / f".{name}.partial"  # renamed once whole: never half a model
            shutil.rmtree(partial, ignore_errors=True)
            build(partial)
            partial.rename(out / name)
            echo(f"{name}: written ({framework})")
        config[name] = {"base_path": name, **settings}
    (out / "models.json").write_text(json.dumps({"models": config}, indent=2) + "\n")
    echo(f"{out / 'models.json'}: serves {', '.join(config) or 'nothing'}")
    return config


def _missing(framework: str, plugin: str, installed: set[str]) -> str:
    """What keeps a demo model from being written and served: its framework's module (which
    builds it) or the plugin that serves it not installed; empty when nothing is."""
    if plugin not in installed:
        return f"the {plugin} plugin is not installed: pip install 'flask-predict[{plugin}]'"
    if importlib.util.find_spec(framework) is None:
        return f"{framework} is not installed"
    return ""
