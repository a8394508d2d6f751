"""MLflow model folders saved by the tests with ``mlflow.sklearn.save_model`` (pickle
serialization, which flask-predict's scikit-learn plugin reads), with signatures inferred
from the training frames as users infer them, and the rows the tests send."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

IRIS_COLUMNS = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)",
                "petal width (cm)"]
IRIS_ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5]]


def save(model: Any, folder: Path, example: Any) -> Path:
    """*model* as ``mlflow.sklearn.save_model`` writes it into version folder *folder*."""
    with warnings.catch_warnings():  # mlflow's own warnings at import and save
        warnings.simplefilter("ignore")
        import mlflow.sklearn
        from mlflow.models import infer_signature

        mlflow.sklearn.save_model(model, str(folder), serialization_format="pickle",
                                  signature=infer_signature(example, model.predict(example)))
    return folder.parent


def iris_frame() -> Any:
    from sklearn.datasets import load_iris

    frame, target = load_iris(return_X_y=True, as_frame=True)
    return frame, target


def train_iris(base: Path) -> Path:
    """A LogisticRegression fitted on iris's DataFrame: a column signature of doubles."""
    from sklearn.linear_model import LogisticRegression

    frame, target = iris_frame()
    model = LogisticRegression(max_iter=500).fit(frame, target)
    return save(model, base / "1", frame)


def train_matrix(base: Path) -> Path:
    """The same fitted on a numpy array: a tensor signature, one input of feature rows."""
    from sklearn.linear_model import LogisticRegression

    frame, target = iris_frame()
    features = frame.to_numpy()
    model = LogisticRegression(max_iter=500).fit(features, target)
    return save(model, base / "1", features)


def train_people(base: Path, scratch: Path) -> Path:
    """The tests' pipeline on a table mixing numbers and text (``tests.tabular_models``)."""
    from tests import tabular_models

    model = tabular_models.train_people(scratch)
    return save(model, base / "1", tabular_models.frame(tabular_models.PEOPLE_ROWS[:1]))


def train_all(root: Path) -> dict[str, dict[str, str]]:
    """Every model under *root*, as ``PREDICT_MODELS``."""
    bases = {"iris": train_iris(root / "iris"), "matrix": train_matrix(root / "matrix"),
             "people": train_people(root / "people", root / "scratch")}
    return {name: {"base_path": str(base)} for name, base in bases.items()}


def close(ours: Any, theirs: Any) -> bool:
    """Predictions equal, floats to 9 significant digits."""
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(close, ours, theirs))
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(close(ours[k], theirs[k]) for k in ours)
    if type(ours) is not type(theirs) and not {type(ours), type(theirs)} <= {int, float}:
        return False
    if isinstance(ours, float) or isinstance(theirs, float):
        return bool(np.isclose(ours, theirs, rtol=1e-9, atol=0) or ours == theirs)
    return bool(ours == theirs)
