"""An MLflow model loaded as ``python_function`` by ``mlflow.pyfunc.load_model``.

``mlflow.pyfunc`` puts the model's ``code_paths`` on ``sys.path``, unpickles its
``PythonModel`` or imports its loader module, and enforces its signature on each call
(columns by name, safe casts, ``params`` by type with their defaults). The instances door
builds the input as MLflow's scoring server builds an ``instances`` body: rows of objects
are columns, anything else one array; ``params`` (or Vertex AI's ``parameters``) from the
request reach ``predict(..., params=...)``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from flask_predict.plugin import (DEFAULT_SIGNATURE, PYFUNC_PLUGIN, ConfigError,
                                  FailedPrecondition, InvalidInput, MLflowModel, ModelMetadata,
                                  Predictor, Signature, Tensor, TensorSpec,
                                  predictions_to_outputs, read_mlmodel, signature_inputs,
                                  signature_outputs, signature_params, tensor_spec,
                                  tensors_to_instances)

ALLOW_CODE = "MLFLOW_ALLOW_MODEL_CODE_EXECUTION"
ALLOW_PICKLE = "MLFLOW_ALLOW_PICKLE_DESERIALIZATION"  # MLflow before 3.18; deprecated since
PARAMS_KEYS = ("params", "parameters")


class PyfuncPredictor(Predictor):
    """A ``mlflow.pyfunc.PyFuncModel``, described by its signature (mlflow enforces it)."""

    enforces_signature = True

    def __init__(self, model: Any, described: MLflowModel | None = None) -> None:
        self.model = model
        columns = signature_inputs(described) if described is not None else None
        answers = signature_outputs(described) if described is not None else None
        self._columns = {c.name for c in columns or ()}
        self._typed = answers is not None
        self._metadata = replace(super().metadata(), instances_door=True)
        if columns is not None and described is not None:
            params = signature_params(described)
            self._metadata = replace(self._metadata, signatures={DEFAULT_SIGNATURE: Signature(
                inputs=tuple(tensor_spec(c) for c in columns),
                outputs=tuple(tensor_spec(c) for c in answers) if answers else (
                    TensorSpec("predictions", "BYTES", None),),
                tabular=all(c.type != "tensor" for c in columns))},
                properties={"optional_inputs": [c.name for c in columns if not c.required],
                            "params": params}, instances_door=True)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> PyfuncPredictor:
        return cls.from_mlflow(read_mlmodel(model_dir), **options)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, **options: Any) -> PyfuncPredictor:
        """``mlflow.pyfunc.load_model`` on the folder. A served model is one its operator
        configured: its pickles load as a native plugin's do (MLflow asks for that consent in
        ``MLFLOW_ALLOW_MODEL_CODE_EXECUTION``, before 3.18 in
        ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``: given for this load only)."""
        if options:
            raise TypeError(f"unknown MLflow option(s) {sorted(options)}")
        try:
            import mlflow.pyfunc
        except ImportError as exc:
            raise ConfigError(f"{model.folder!r} loads as python_function with mlflow, which "
                              f"is not installed ({exc}); install it: pip install "
                              f'"flask-predict[{PYFUNC_PLUGIN}]"') from None
        with model_code_allowed():
            return cls(mlflow.pyfunc.load_model(model.folder), model)

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        """Named columns, one object per row, as MLflow takes them (a lone column too, which
        the default door would give as bare values that MLflow's schema cannot name). With
        output columns in the signature, the answer is those columns, typed by it (as
        ``spark_udf`` and MLServer answer them); else one JSON prediction per row."""
        rows = tensors_to_instances(inputs)
        if len(inputs) == 1 and next(iter(inputs)) in self._columns:
            name = next(iter(inputs))
            rows = [{name: value} for value in rows]
        result = self._call(rows, None)
        predictions = _columns(result) if self._typed else _jsonable(result)
        return predictions_to_outputs(predictions, self.signature(signature).outputs)

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        params = next((kwargs[k] for k in PARAMS_KEYS if k in kwargs), None)
        if params is not None and not isinstance(params, dict):
            raise InvalidInput(f"params must be an object, not {type(params).__name__}")
        return _jsonable(self._call(instances, params))

    def _call(self, instances: list[Any], params: dict[str, Any] | None) -> Any:
        from mlflow.exceptions import MlflowException

        try:
            return self.model.predict(_model_input(instances), params=params)
        except MlflowException as exc:  # the schema's refusal: the client's to fix
            raise FailedPrecondition(_first_line(str(exc.message)))


def _model_input(instances: list[Any]) -> Any:
    """Rows of objects as a DataFrame of their columns, anything else as one array."""
    if instances and all(isinstance(row, dict) for row in instances):
        import pandas as pd

        return pd.DataFrame(instances)
    return np.asarray(instances)


def _columns(result: Any) -> list[Any]:
    """The predictions as the signature's output columns take them: a frame's records (a
    one-column frame's values), a series' or an array's values."""
    import pandas as pd

    if isinstance(result, pd.DataFrame) and len(result.columns) == 1:
        result = result[result.columns[0]]
    if isinstance(result, pd.DataFrame):
        return list(result.to_dict(orient="records"))
    if isinstance(result, pd.Series):
        return list(result.to_numpy())
    return _jsonable(result)


def _jsonable(result: Any) -> list[Any]:
    """The predictions as MLflow's scoring server writes them: a frame's records, a series as
    the records of its one-column frame (``[{"name": value}, ...]``), an array's values."""
    import pandas as pd

    if isinstance(result, pd.DataFrame):
        return list(result.to_dict(orient="records"))
    if isinstance(result, pd.Series):
        return list(pd.DataFrame(result).to_dict(orient="records"))
    if isinstance(result, np.ndarray):
        return list(result.tolist())
    if isinstance(result, dict):
        return [{k: _jsonable(v) if isinstance(v, (np.ndarray, pd.Series)) else v
                 for k, v in result.items()}]
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "the input does not match the model's signature"


def consent_variable() -> str:
    """The environment variable this MLflow reads for consent to load a model's code. MLflow
    3.18 warns when the older one is set at all (a warning an operator treating warnings as
    errors would see as a failed load), so only the one it reads is set."""
    import mlflow.environment_variables as variables

    return ALLOW_CODE if hasattr(variables, ALLOW_CODE) else ALLOW_PICKLE


@contextmanager
def model_code_allowed() -> Iterator[None]:
    name = consent_variable()
    before = os.environ.get(name)
    os.environ[name] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
