"""CatBoost predictor: ``model.cbm`` (``save_model``), a CatBoost JSON ``model.json``
(``save_model(format="json")``) or a pickled model (``model.joblib``, ``model.pkl``).

A model fitted on named columns takes one input per feature, categorical and text features
included (:mod:`.columns`); one fitted on a matrix takes ``inputs`` (``[-1, n_features]``).
Each output is the model's own method on the request's ``Pool`` (:meth:`CatBoostPredictor.pool`,
which its SHAP values read too): a classifier's ``predict`` (labels) and
``predict_proba``, a regressor's or ranker's ``predict``.

Explanations (``explain``) are CatBoost's own exact SHAP values (``ShapValues``) of the
model's raw formula value (``RawFormulaVal``: the log-odds of the positive class for a
binary classifier, one score per class for a multiclass one), the baseline being its
expected value, by column name for a model fitted on named columns.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Mapping, Sequence

import catboost as cb
import joblib
import numpy as np

from flask_predict import (Explanation, FailedPrecondition, ModelMetadata, Predictor,
                           Signature, TensorSpec)
from flask_predict.codecs import NUMPY_TO_V2
from flask_predict.explanation import from_contributions
from flask_predict.core.runtime import process_threads
from flask_predict.core.tabular import feature_rows, read_columns, tabular_signature
from flask_predict.models.mlmodel import MLflowModel
from flask_predict.types import DEFAULT_SIGNATURE, Tensor

from .columns import layout, to_pool
from .manifest import JSON_FILE, NATIVE_FILE, PICKLE_FILES, is_catboost_json

CLASSIFICATION = {"Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll"}
RANKING = ("Rank", "Pair", "QuerySoftMax", "QueryRMSE", "QueryCrossEntropy")
"""Loss functions (or parts of their names) of the models ``CatBoostClassifier`` and
``CatBoostRanker`` load; a native file of any other loss loads as a ``CatBoostRegressor``."""


class CatBoostPredictor(Predictor):
    """A CatBoost model loaded from a version folder."""

    instance_outputs = ("predict",)

    def __init__(self, model: cb.CatBoost, outputs: Sequence[str] | None = None,
                 thread_count: int | None = None) -> None:
        self.model = model
        self.thread_count = thread_count
        self.threads = 1
        """``thread_count`` of a prediction: the worker's share after :meth:`after_fork`."""
        self.methods: tuple[str, ...] = ("predict", "predict_proba") if isinstance(
            model, cb.CatBoostClassifier) else ("predict",)
        unknown = [o for o in outputs or () if o not in self.methods]
        if unknown:
            raise TypeError(f"unknown output(s) {unknown}; this model has {list(self.methods)}")
        self.default_outputs = tuple(outputs) if outputs else self.methods
        self.layout = layout(model)
        """One column per feature; ``None``: one matrix of numbers."""
        self.n_features = len(model.feature_names_ or [])
        self._metadata = self._describe()
        self.after_fork()

    def after_fork(self) -> None:
        """The model's ``thread_count`` option, else this process's thread count
        (:func:`flask_predict.core.runtime.process_threads`: each worker's share of the cores),
        else CatBoost's default (every core)."""
        self.threads = self.thread_count or process_threads() or -1

    @classmethod
    def from_path(cls, model_dir: str, outputs: Sequence[str] | None = None,
                  thread_count: int | None = None, **options: Any) -> CatBoostPredictor:
        if options:
            raise TypeError(f"unknown CatBoost option(s) {sorted(options)}")
        return cls(load_model(model_dir), outputs, thread_count)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, outputs: Sequence[str] | None = None,
                    thread_count: int | None = None, **options: Any) -> CatBoostPredictor:
        """The ``catboost`` flavor: its ``data`` file, in its ``save_format``."""
        if options:
            raise TypeError(f"unknown CatBoost option(s) {sorted(options)}")
        conf = model.flavor("catboost")
        fmt = str(conf.get("save_format") or "cbm")
        loaded = _native_model(model.file(conf.get("data")), fmt)
        return model.answering(cls(loaded, model.outputs(outputs), thread_count))

    def _describe(self) -> ModelMetadata:
        loss = str(self.model.get_all_params().get("loss_function", ""))
        properties: dict[str, Any] = {"loss_function": loss, "n_features": self.n_features,
                                      "model": type(self.model).__name__}
        outputs = [TensorSpec("predict", "FP64", (-1,))]
        if isinstance(self.model, cb.CatBoostClassifier):
            classes = np.asarray(self.model.classes_)
            properties["classes"] = classes.tolist()
            label_type = "BYTES" if classes.dtype.kind in "OSU" else NUMPY_TO_V2.get(
                classes.dtype, "INT64")
            outputs = [TensorSpec("predict", label_type, (-1,)),
                       TensorSpec("predict_proba", "FP64", (-1, len(classes)))]
        if self.layout is not None:
            properties["feature_names"] = [column.name for column in self.layout]
            properties["cat_features"] = [self.layout[i].name
                                          for i in self.model.get_cat_feature_indices()]
            properties["text_features"] = [self.layout[i].name
                                           for i in self.model.get_text_feature_indices()]
            signature = tabular_signature(self.layout, outputs)
        else:
            signature = Signature(inputs=(TensorSpec("inputs", "FP64", (-1, self.n_features)),),
                                  outputs=tuple(outputs))
        return ModelMetadata("catboost", {DEFAULT_SIGNATURE: signature}, properties=properties)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        pool = self.pool(inputs)
        wanted = outputs or self.default_outputs
        try:
            answers = {method: np.asarray(getattr(self.model, method)(
                pool, thread_count=self.threads)) for method in wanted}
        except cb.CatBoostError as exc:
            raise FailedPrecondition(f"Prediction failed: {_first_line(exc)}")
        # a classifier's labels come as a column ([N, 1]): one label per row
        return {name: value[:, 0] if value.ndim == 2 and value.shape[1] == 1 and
                name == "predict" else value for name, value in answers.items()}

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """CatBoost's SHAP values of the raw formula value, the expected value last."""
        pool = self.pool(inputs)
        try:
            shap = self.model.get_feature_importance(pool, type="ShapValues",
                                                     thread_count=self.threads)
            raw = self.model.predict(pool, prediction_type="RawFormulaVal",
                                     thread_count=self.threads)
        except cb.CatBoostError as exc:
            raise FailedPrecondition(f"Explanation failed: {_first_line(exc)}")
        names = [column.name for column in self.layout] if self.layout is not None else None
        classes = self._metadata.properties.get("classes")
        return from_contributions(shap, raw, names, self._metadata.signature.inputs[0].name,
                                  "RawFormulaVal", classes)

    def pool(self, inputs: Mapping[str, Tensor]) -> cb.Pool:
        """The request's inputs as the ``Pool`` the model predicts from."""
        if self.layout is not None:
            return to_pool(read_columns(inputs, self.layout), self.layout)
        rows = feature_rows(inputs, self._metadata.signature.inputs[0])
        return cb.Pool(np.asarray(rows, dtype=np.float64))


def _native_model(path: str, fmt: str) -> cb.CatBoost:
    """A model file of CatBoost's, as the class its loss function says."""
    plain = cb.CatBoost()
    plain.load_model(path, format=fmt)
    model = native_class(str(plain.get_all_params().get("loss_function", "")))()
    model.load_model(path, format=fmt)
    return model


def load_model(model_dir: str) -> cb.CatBoost:
    """``model.cbm``, else a CatBoost ``model.json``, else a joblib/pickle of a model."""
    for name, fmt in ((NATIVE_FILE, "cbm"), (JSON_FILE, "json")):
        path = os.path.join(model_dir, name)
        if os.path.isfile(path) and (fmt == "cbm" or is_catboost_json(path)):
            return _native_model(path, fmt)
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".joblib"):
            loaded = joblib.load(path)
        else:
            with open(path, "rb") as file:
                loaded = pickle.load(file)
        if not isinstance(loaded, cb.CatBoost):
            raise TypeError(f"{path} holds a {type(loaded).__module__}."
                            f"{type(loaded).__name__}, not a CatBoost model")
        return loaded
    raise FileNotFoundError(f"no CatBoost model file in {model_dir} (looked for "
                            f"{[NATIVE_FILE, JSON_FILE, *PICKLE_FILES]})")


def native_class(loss: str) -> type[cb.CatBoost]:
    """The class a native file of a model trained with *loss* loads as."""
    chosen: type[cb.CatBoost] = cb.CatBoostRegressor
    if loss.split(":")[0] in CLASSIFICATION:
        chosen = cb.CatBoostClassifier
    elif any(part in loss for part in RANKING):
        chosen = cb.CatBoostRanker
    return chosen


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
