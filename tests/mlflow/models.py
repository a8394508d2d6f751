"""MLflow model folders written by MLflow's own ``save_model``, once per test session, and
the reference answers of ``mlflow.pyfunc.load_model`` on the same input."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from flask_predict_mlflow.predictor import model_code_allowed

ROWS = [{"age": 31.0, "income": 40000.0, "city": "paris"},
        {"age": 58.0, "income": 12000.0, "city": "lyon"},
        {"age": 22.0, "income": 95000.0, "city": "nice"}]
"""Rows with a string column, for the DataFrame pipelines."""
NUMBERS = [{"a": 1.0, "b": float("nan")}, {"a": 4.0, "b": 0.0}, {"a": 2.5, "b": 1.0}]
"""Rows of doubles, one missing, for the boosters."""


def frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def training() -> tuple[Any, Any]:
    """A table with a string column, and its labels."""
    rng = np.random.default_rng(0)
    n = 80
    table = frame([{"age": float(rng.integers(18, 80)),
                    "income": float(rng.integers(1, 100) * 1000),
                    "city": str(rng.choice(["paris", "lyon", "nice"]))} for _ in range(n)])
    labels = ((table["age"] > 45) ^ (table["city"] == "lyon")).astype(int).to_numpy()
    return table, labels


def numbers() -> tuple[Any, Any]:
    rng = np.random.default_rng(1)
    table = frame([{"a": float(rng.normal()), "b": float(rng.normal())} for _ in range(60)])
    table.loc[::7, "b"] = np.nan
    labels = (table["a"] + table["b"].fillna(0) > 0).astype(int).to_numpy()
    return table, labels


def pipeline() -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    table, labels = training()
    steps = ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                               ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])])
    return Pipeline([("prep", steps), ("model", LogisticRegression())]).fit(table, labels)


def save_all(root: Path) -> dict[str, Path]:
    """Every MLflow folder the tests serve, by name."""
    with warnings.catch_warnings():  # MLflow's advice on type hints, pickles, input examples
        warnings.simplefilter("ignore")
        return _save_all(root)


def _save_all(root: Path) -> dict[str, Path]:
    import mlflow
    from mlflow.models import infer_signature

    folders: dict[str, Path] = {}
    table, labels = training()
    model = pipeline()
    signature = infer_signature(table, model.predict(table))
    for serialization in ("skops", "pickle", "cloudpickle"):
        path = root / f"sk_{serialization}"
        mlflow.sklearn.save_model(model, str(path), serialization_format=serialization,
                                  pip_requirements=pinned("scikit-learn", *(
                                      [serialization] if serialization != "pickle" else [])),
                                  signature=signature, input_example=table.head(2))
        folders[path.name] = path
    path = root / "sk_proba"
    mlflow.sklearn.save_model(model, str(path), pip_requirements=pinned("scikit-learn"),
                              signature=infer_signature(
        table, model.predict_proba(table)), pyfunc_predict_fn="predict_proba")
    folders[path.name] = path

    import xgboost as xgb

    x, y = numbers()
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 2},
                        xgb.DMatrix(x, label=y), 5)
    path = root / "xgb"
    mlflow.xgboost.save_model(booster, str(path), pip_requirements=pinned("xgboost"),
                              signature=infer_signature(
        x, booster.predict(xgb.DMatrix(x))), input_example=x.head(2))
    folders[path.name] = path

    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    path = root / "xgb_optional"  # "b" may be left out: the booster reads it as missing
    mlflow.xgboost.save_model(booster, str(path), pip_requirements=pinned("xgboost"),
                              signature=ModelSignature(inputs=Schema([
                                  ColSpec("double", "a"), ColSpec("double", "b", required=False)])))
    folders[path.name] = path

    import lightgbm as lgb

    gbm = lgb.train({"objective": "binary", "verbose": -1, "min_data_in_leaf": 2},
                    lgb.Dataset(x, y), 5)
    path = root / "lgb"
    mlflow.lightgbm.save_model(gbm, str(path), pip_requirements=pinned("lightgbm"),
                               signature=infer_signature(x, gbm.predict(x)))
    folders[path.name] = path

    import catboost as cb

    boosted = cb.CatBoostClassifier(iterations=5, depth=2, verbose=0, thread_count=1,
                                    train_dir=str(root / "catboost_info")).fit(x, y)
    path = root / "cb"
    mlflow.catboost.save_model(boosted, str(path), pip_requirements=pinned("catboost"),
                               signature=infer_signature(x, boosted.predict(x)))
    folders[path.name] = path

    path = root / "onnx"
    mlflow.onnx.save_model(onnx_model(), str(path), pip_requirements=pinned("onnx", "onnxruntime"))
    folders[path.name] = path

    path = root / "custom"
    code = root / "code" / "scaling.py"
    code.parent.mkdir(parents=True, exist_ok=True)
    code.write_text("def scale(values, factor):\n    return values * factor\n")
    mlflow.pyfunc.save_model(str(path), python_model=scaled(), code_paths=[str(code)],
                             pip_requirements=pinned("cloudpickle", "pandas"),
                             signature=infer_signature(x, x["a"], params={"factor": 2.0}))
    folders[path.name] = path
    return folders


def pinned(*names: str) -> list[str]:
    """``name==version`` for each installed package (and mlflow), as MLflow would infer them
    (inferring runs the model in a subprocess: 25 s a save)."""
    from importlib.metadata import version

    return [f"mlflow=={version('mlflow-skinny')}"] + [f"{name}=={version(name)}" for name in names]


def onnx_model() -> Any:
    """A linear regression converted by skl2onnx: one float32 input ``x`` of two columns."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LinearRegression

    x = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 3.0]], dtype=np.float32)
    fitted = LinearRegression().fit(x, [1.0, 2.0, 6.0])
    return convert_sklearn(fitted, initial_types=[("x", FloatTensorType([None, 2]))],
                           target_opset=17)


def scaled() -> Any:
    """A custom model whose code comes from its code_paths and whose factor is a param
    (its class pickled by value, as a notebook's is)."""
    from mlflow.pyfunc import PythonModel

    class Scaled(PythonModel):  # type: ignore[misc]
        def predict(self, context: Any, model_input: Any, params: Any = None) -> Any:
            from scaling import scale  # the model's code_paths

            return scale(model_input["a"].fillna(0.0), (params or {}).get("factor", 2.0))

    return Scaled()


def reference(path: Path, data: Any, params: dict[str, Any] | None = None) -> Any:
    """``mlflow.pyfunc.load_model(path).predict(data)``, as JSON-able values (a pandas Series
    as MLflow's scoring server writes it: the records of its one-column frame)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mlflow.pyfunc

        with model_code_allowed():
            result = mlflow.pyfunc.load_model(str(path)).predict(data, params=params)
    if isinstance(result, dict):  # ONNX: output name -> array
        return {name: np.asarray(value).tolist() for name, value in result.items()}
    import pandas as pd

    if isinstance(result, pd.Series):
        return pd.DataFrame(result).to_dict(orient="records")
    return np.asarray(result).tolist()
