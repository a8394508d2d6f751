"""LightGBM predictor: a ``Booster.save_model`` text file (``model.txt``, ``model.lgb``,
``model.bst``) or a pickled Booster or scikit-learn wrapper (``model.joblib``, ``model.pkl``).

NaN and JSON ``null`` are missing values, as LightGBM reads them (``use_missing``; a model
trained with ``zero_as_missing`` also reads 0 so). A model without feature names takes one
input, ``inputs`` (``[-1, n_features]``); a model fitted on a DataFrame takes one input per
column, its pandas categories by value (:mod:`.columns`), turned into the same float64
matrix.

Every output comes from one prediction of the Booster (:meth:`LightGBMPredictor.raw`):
LightGBM's own single-row call for a few rows (:mod:`.single_row`), ``Booster.predict``
for more; a classifier's labels and probabilities are derived from it as
``LGBMClassifier`` derives them. Explanations (``explain``) are LightGBM's own TreeSHAP
contributions (``pred_contrib``) to the raw score, from the same matrix (:mod:`.explain`).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Mapping, Sequence

import joblib
import lightgbm as lgb
import numpy as np

from flask_predict import (Explanation, FailedPrecondition, ModelMetadata, Predictor,
                           Signature, TensorSpec)
from flask_predict.codecs import NUMPY_TO_V2
from flask_predict.core.runtime import process_threads
from flask_predict.core.tabular import code_matrix, feature_rows, read_columns, tabular_signature
from flask_predict.models.mlmodel import MLflowModel, load_serialized
from flask_predict.types import DEFAULT_SIGNATURE, Tensor

from .columns import feature_properties, layout
from .explain import explain
from .manifest import PICKLE_FILES, TEXT_FILES, is_lightgbm_text
from .single_row import SingleRowPredict

SINGLE_ROWS = 8
"""Batches up to this many rows take the single-row call, one row at a time; larger ones
``Booster.predict``, on the worker's threads."""


class LightGBMPredictor(Predictor):
    """A LightGBM model loaded from a version folder."""

    instance_outputs = ("predict",)

    def __init__(self, model: lgb.Booster | lgb.LGBMModel,
                 outputs: Sequence[str] | None = None, num_threads: int | None = None) -> None:
        self.model = model
        self.booster = model if isinstance(model, lgb.Booster) else model.booster_
        self.num_threads = num_threads
        self.threads = 1
        """``num_threads`` of a batch: one while loading (the gunicorn master), the
        worker's share after (:meth:`after_fork`)."""
        self.n_features = self.booster.num_feature()
        self.n_outputs = self.booster.num_model_per_iteration()
        self.own_methods = isinstance(model, lgb.LGBMModel) and (
            type(model) not in (lgb.LGBMClassifier, lgb.LGBMRegressor)
            or callable(model.objective))
        """Only the model's own methods answer as it does (a subclass, a ranker, a custom
        objective); otherwise every output is derived from one prediction of the Booster."""
        self.classes = (np.asarray(model.classes_) if isinstance(model, lgb.LGBMClassifier)
                        else None)
        """A classifier's labels; ``None``: one output, the Booster's."""
        self.methods: tuple[str, ...] = ("predict",) if self.classes is None else (
            "predict", "predict_proba")
        unknown = [o for o in outputs or () if o not in self.methods]
        if unknown:
            raise TypeError(f"unknown output(s) {unknown}; this model has {list(self.methods)}")
        self.default_outputs = tuple(outputs) if outputs else self.methods
        self.iterations = self.booster.best_iteration
        """What ``Booster.predict`` and the wrappers use (``-1``: every iteration)."""
        self.single_row = SingleRowPredict(self.booster, self.iterations, self.n_outputs)
        self.layout = layout(self.booster)
        """One column per named feature; ``None``: one matrix of numbers."""
        self._metadata = self._describe()
        self.after_fork()

    def after_fork(self) -> None:
        """The model's ``num_threads`` option, else this process's thread count
        (:func:`flask_predict.core.runtime.process_threads`: one in the gunicorn master, which
        loads shared models; each worker's share of the cores in a worker), else LightGBM's
        default (every core)."""
        self.threads = self.num_threads or process_threads() or 0

    @classmethod
    def from_path(cls, model_dir: str, outputs: Sequence[str] | None = None,
                  num_threads: int | None = None, **options: Any) -> LightGBMPredictor:
        if options:
            raise TypeError(f"unknown LightGBM option(s) {sorted(options)}")
        return cls(load_model(model_dir), outputs, num_threads)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, outputs: Sequence[str] | None = None,
                    num_threads: int | None = None, **options: Any) -> LightGBMPredictor:
        """The ``lightgbm`` flavor: a Booster's text file, or a scikit-learn model
        serialized as its ``serialization_format`` says."""
        if options:
            raise TypeError(f"unknown LightGBM option(s) {sorted(options)}")
        conf = model.flavor("lightgbm")
        path = model.file(conf.get("data"))
        loaded = lgb.Booster(model_file=path) if is_lightgbm_text(path) else \
            load_serialized(path, conf)
        if not isinstance(loaded, (lgb.Booster, lgb.LGBMModel)):
            raise TypeError(f"{path} holds a {type(loaded).__name__}, not a LightGBM model")
        return model.answering(cls(loaded, model.outputs(outputs), num_threads))

    def _describe(self) -> ModelMetadata:
        objective = str(self.booster.params.get("objective", ""))
        properties: dict[str, Any] = {"objective": objective, "n_features": self.n_features,
                                      "booster": type(self.model).__name__}
        wide = (-1, self.n_outputs) if self.n_outputs > 1 else (-1,)
        outputs = [TensorSpec("predict", "FP64", wide)]
        if self.classes is not None:
            classes = self.classes
            properties["classes"] = classes.tolist()
            label_type = "BYTES" if classes.dtype.kind in "OSU" else NUMPY_TO_V2.get(
                classes.dtype, "INT64")
            outputs = [TensorSpec("predict", label_type, (-1,)),
                       TensorSpec("predict_proba", "FP64", (-1, len(classes)))]
        if self.layout is not None:
            properties.update(feature_properties(self.layout))
            signature = tabular_signature(self.layout, outputs)
        else:
            signature = Signature(inputs=(TensorSpec("inputs", "FP64", (-1, self.n_features)),),
                                  outputs=tuple(outputs))
        return ModelMetadata("lightgbm", {DEFAULT_SIGNATURE: signature}, properties=properties)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        features = self.features(inputs)
        wanted = outputs or self.default_outputs
        try:
            if self.own_methods:
                return {method: np.asarray(getattr(self.model, method)(features))
                        for method in wanted}
            every = self._derive(self.raw(features))
        except lgb.basic.LightGBMError as exc:
            raise FailedPrecondition(f"Prediction failed: {_first_line(exc)}")
        return {method: every[method] for method in wanted}

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """TreeSHAP attributions of the model's raw score (:mod:`.explain`)."""
        features = self.features(inputs)
        classes = self.classes.tolist() if self.classes is not None else None
        try:
            return explain(self.booster, features, self.iterations, self.threads,
                           self.layout, self._metadata.signature.inputs[0].name, classes)
        except lgb.basic.LightGBMError as exc:
            raise FailedPrecondition(f"Explanation failed: {_first_line(exc)}")

    def features(self, inputs: Mapping[str, Tensor]) -> Tensor:
        """The request's inputs as the C-contiguous float64 matrix the Booster reads."""
        if self.layout is not None:
            return code_matrix(read_columns(inputs, self.layout), self.layout, np.float64)
        rows = feature_rows(inputs, self._metadata.signature.inputs[0])
        return np.require(rows, np.float64, ("C", "A"))

    def raw(self, features: Tensor) -> Tensor:
        """``Booster.predict(features)``: the model's output, one row or row of K each."""
        if features.shape[0] <= SINGLE_ROWS:
            return self.single_row(features)
        return np.asarray(self.booster.predict(features, num_iteration=self.iterations,
                                               num_threads=self.threads))

    def _derive(self, raw: Tensor) -> dict[str, Tensor]:
        """Every output from the Booster's, as ``LGBMClassifier`` derives its two."""
        classes = self.classes
        if classes is None:
            return {"predict": raw}
        probabilities = raw if raw.ndim == 2 else np.vstack((1.0 - raw, raw)).transpose()
        labels = classes[np.argmax(probabilities, axis=1)] if len(raw) else classes[:0]
        return {"predict": labels, "predict_proba": probabilities}


def load_model(model_dir: str) -> lgb.Booster | lgb.LGBMModel:
    """A text model file first, else a joblib/pickle of a Booster or wrapper."""
    for name in TEXT_FILES:
        path = os.path.join(model_dir, name)
        if is_lightgbm_text(path):
            return lgb.Booster(model_file=path)
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".joblib"):
            model = joblib.load(path)
        else:
            with open(path, "rb") as file:
                model = pickle.load(file)
        if not isinstance(model, (lgb.Booster, lgb.LGBMModel)):
            raise TypeError(f"{path} holds a {type(model).__module__}.{type(model).__name__}, "
                            "not a LightGBM model")
        return model
    raise FileNotFoundError(f"no LightGBM model file in {model_dir} (looked for "
                            f"{list(TEXT_FILES + PICKLE_FILES)})")


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
