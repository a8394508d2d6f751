"""scikit-learn predictor: ``model.joblib`` or ``model.pkl`` holding an estimator or pipeline.

Outputs ``predict`` and, for classifiers, ``predict_proba``. The instances door (AI Platform)
answers ``predict()`` only, as Google's runtime does; ``tolist()`` keeps integer labels
integers.

A model fitted on a matrix of numbers takes one input, ``inputs`` (``[-1, n_features]``).
A model fitted on a pandas DataFrame takes one input per column, and one whose first step
reads text takes one input of text (:mod:`.columns`); those are given to the model as a
DataFrame, or as the 1-D array of text, built for each request (:mod:`.frame`). Where every
column takes plain numbers, the columns are one matrix instead (:meth:`_predict_numbers`).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Mapping, Sequence

import joblib
import numpy as np

from flask_predict.plugin import (DEFAULT_SIGNATURE, NUMBER, NUMPY_TO_V2, UNPICKLING_ERRORS,
                                  Explanation, FailedPrecondition, InvalidInput, ModelMetadata,
                                  PredictError, Predictor, Signature, Tensor, TensorSpec,
                                  cannot_explain, check_shape, column_matrix, known_categories,
                                  number_columns, one_line, read_columns, refused_feature,
                                  refused_number, single_input, tabular_signature,
                                  unreadable_pickle)
from flask_predict.plugin import MLflowModel, load_serialized

from .columns import layout
from .explain import LinearExplainer, linear_explainer
from .linear import is_linear_classifier, linear_predict, plain_finite
from .manifest import MODEL_FILES  # noqa: E402  (one list: detection and loading)
from .onepass import one_pass

__all__ = ["SklearnPredictor", "is_linear_classifier", "linear_predict", "load_model"]
METHODS = ("predict", "predict_proba")
INPUT = "inputs"
"""The one input of a model fitted on a matrix of numbers."""


class SklearnPredictor(Predictor):
    """A scikit-learn estimator (or pipeline) loaded from a version folder."""

    instance_outputs = ("predict",)

    def __init__(self, model: Any, outputs: Sequence[str] | None = None,
                 model_dir: str | None = None) -> None:
        self.model = model
        self.methods = tuple(m for m in METHODS if callable(getattr(model, m, None)))
        if not self.methods:
            raise TypeError(f"{type(model).__name__} has no predict method")
        unknown = [o for o in outputs or () if o not in self.methods]
        if unknown:
            raise TypeError(f"unknown output(s) {unknown}; this model has {list(self.methods)}")
        self.default_outputs = tuple(outputs) if outputs else self.methods
        self.layout = layout(model)
        """The columns (or text) the model takes; ``None``: one matrix of numbers."""
        self._metadata = self._describe()
        self.explainer = self._explainer(model_dir)
        """How ``explain`` attributes the raw output (:mod:`.explain`), or why it cannot."""
        if self.layout is not None:
            from . import frame  # pandas, for these models only

            self.frame = frame
            self.numbers = number_columns(self.layout.columns)
            """The columns, where every one takes plain numbers: the rows are then one
            matrix (:meth:`_predict_numbers`); ``None`` otherwise."""
            named = self.numbers is not None
            self.linear = named and is_linear_classifier(model, named=True)
            self.one_pass = (one_pass(model, named=True)
                             if named and "predict_proba" in self.methods else None)
            return
        self.linear = is_linear_classifier(model)
        """Whether ``predict`` can skip scikit-learn's per-call checks (:func:`linear_predict`)."""
        self.one_pass = one_pass(model) if "predict_proba" in self.methods else None
        """``predict`` and ``predict_proba`` from one pass of the model, where that is
        exactly what the model's own methods answer (:mod:`.onepass`); else ``None``."""

    @classmethod
    def from_path(cls, model_dir: str, outputs: Sequence[str] | None = None,
                  **options: Any) -> SklearnPredictor:
        if options:
            raise TypeError(f"unknown scikit-learn option(s) {sorted(options)}")
        return cls(load_model(model_dir), outputs, model_dir)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, outputs: Sequence[str] | None = None,
                    **options: Any) -> SklearnPredictor:
        """The ``sklearn`` flavor, in any of its serializations (``skops``, ``cloudpickle``,
        ``pickle``); a model saved with ``pyfunc_predict_fn`` (``predict_proba``) answers
        that method on every door."""
        if options:
            raise TypeError(f"unknown scikit-learn option(s) {sorted(options)}")
        conf = model.flavor("sklearn")
        path = model.file(conf.get("pickled_model") or model.pyfunc.get("model_path"))
        return model.answering(cls(load_serialized(path, conf), model.outputs(outputs),
                                   model.folder))

    def _explainer(self, model_dir: str | None) -> LinearExplainer | str:
        """A linear model's explainer (:mod:`.explain`), or why it has none."""
        width = int(getattr(self.model, "n_features_in_", 0) or 0)
        if self.layout is None:
            return linear_explainer(self.model, model_dir, None, width, lambda rows: rows)
        if self.layout.text:
            return "a model fitted on text"
        import pandas as pd

        names = [column.name for column in self.layout.columns]

        def frame(saved: Any) -> Any:
            if not isinstance(saved, dict):
                saved = dict(zip(names, np.asarray(saved).T))
            return pd.DataFrame(saved)

        return linear_explainer(self.model, model_dir, names, len(names), frame)

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """The coefficients times each feature's distance from the baseline
        (:mod:`.explain`); any other model is refused (400)."""
        if isinstance(self.explainer, str):
            raise cannot_explain(self.explainer)
        names = None
        if self.layout is not None:
            from . import frame  # pandas, for these models only

            data = frame.to_frame(read_columns(inputs, self.layout.columns), self.layout)
            names = [column.name for column in self.layout.columns]
        else:
            data = single_input(inputs)
            check_shape(data, self._metadata.signature.inputs[0])
            data = np.asarray(data, dtype=np.float64)
        try:
            return self.explainer.explain(data, len(data), names, INPUT)
        except ValueError as exc:  # scikit-learn's input validation, a missing feature
            raise FailedPrecondition(f"Explanation failed: {exc}")

    def _describe(self) -> ModelMetadata:
        n_features = int(getattr(self.model, "n_features_in_", -1))
        classes = getattr(self.model, "classes_", None)
        label_type = _datatype(np.asarray(classes)) if classes is not None else "FP64"
        outputs = [TensorSpec("predict", label_type, (-1,))]
        if "predict_proba" in self.methods:
            width = len(classes) if classes is not None else -1
            outputs.append(TensorSpec("predict_proba", "FP64", (-1, width)))
        properties: dict[str, Any] = {"estimator": type(self.model).__name__,
                                      "n_features": n_features}
        if classes is not None:
            properties["classes"] = np.asarray(classes).tolist()
        names = getattr(self.model, "feature_names_in_", None)
        if names is not None:
            properties["feature_names"] = [str(n) for n in names]
        if self.layout is not None:
            categories = known_categories(self.layout.columns)
            if categories:
                properties["categories"] = categories
            signature = tabular_signature(self.layout.columns, outputs)
        else:
            signature = Signature(inputs=(TensorSpec(INPUT, "FP64", (-1, n_features)),),
                                  outputs=tuple(outputs))
        return ModelMetadata("sklearn", {DEFAULT_SIGNATURE: signature}, properties=properties)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        wanted = outputs or self.default_outputs
        if self.layout is not None:
            if self.numbers is not None:
                return self._predict_numbers(inputs, wanted)
            columns = read_columns(inputs, self.layout.columns)
            data = self.frame.to_frame(columns, self.layout)
            try:
                return self.frame.run_methods(self.model, data, wanted)
            except ValueError as exc:  # scikit-learn's input validation
                raise refusal(exc, refused_number(columns, **refuses(exc)))
        features = single_input(inputs)
        check_shape(features, self._metadata.signature.inputs[0])
        try:
            if self.one_pass is not None and "predict_proba" in wanted:
                predict, predict_proba = self.one_pass(features)
                both = {"predict": predict, "predict_proba": predict_proba}
                return {method: both[method] for method in wanted}
            result = {}
            for method in wanted:
                if method == "predict" and self.linear and plain_finite(features):
                    result[method] = linear_predict(self.model, features)
                else:
                    result[method] = np.asarray(getattr(self.model, method)(features))
            return result
        except ValueError as exc:  # scikit-learn's input validation
            raise refusal(exc, refused_feature(features, **refuses(exc)))


    def _predict_numbers(self, inputs: Mapping[str, Tensor],
                         wanted: Sequence[str]) -> dict[str, Tensor]:
        """A model fitted on a DataFrame of numbers: the columns as one float64 matrix, in
        Fortran order, as pandas hands such a frame to scikit-learn (so ``X @ coef_.T``
        is the same to the last bit). Logistic regression and linear classifiers answer
        from it without scikit-learn's per-call checks (:mod:`.linear`, :mod:`.onepass`);
        any other model, or values those checks would refuse, get a DataFrame of that one
        block, which costs a fraction of one built column by column."""
        assert self.layout is not None and self.numbers is not None
        columns, matrix = column_matrix(inputs, self.layout.columns)
        matrix = np.asfortranarray(matrix)
        if plain_finite(matrix):
            if self.one_pass is not None and "predict_proba" in wanted:
                predict, predict_proba = self.one_pass(matrix)
                both = {"predict": predict, "predict_proba": predict_proba}
                return {method: both[method] for method in wanted}
            if self.linear and all(method == "predict" for method in wanted):
                return {method: linear_predict(self.model, matrix) for method in wanted}
        try:
            return self.frame.run_methods(self.model, self.frame.number_frame(
                matrix, self.numbers), wanted)
        except ValueError as exc:  # scikit-learn's input validation
            raise refusal(exc, refused_number(columns, **refuses(exc)))


def refuses(exc: ValueError) -> dict[str, bool]:
    """What scikit-learn's input validation refused (``_assert_all_finite``'s words)."""
    text = str(exc)
    return {"missing": "contains NaN" in text, "infinite": "contains infinity" in text}


def refusal(exc: ValueError, named: FailedPrecondition | None) -> PredictError:
    """scikit-learn's refusal of a request as one line: the 400 naming the column that
    holds the value it refused, else its message's first line."""
    if named is not None:
        return named
    return FailedPrecondition(f"Prediction failed: {one_line(str(exc))}")


def load_model(model_dir: str) -> Any:
    """``model.joblib`` (joblib), else ``model.pkl`` (pickle), as Google's runtime loads."""
    for name in MODEL_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            try:
                if name.endswith(".joblib"):
                    return joblib.load(path)
                with open(path, "rb") as file:
                    return pickle.load(file)
            except UNPICKLING_ERRORS as exc:
                raise unreadable_pickle(path, exc) from None
    raise FileNotFoundError(f"Could not find either model.joblib or model.pkl in {model_dir}")


def _datatype(array: np.ndarray) -> str:
    if array.dtype.kind in "USO":
        return "BYTES"
    return NUMPY_TO_V2.get(array.dtype, "FP64")
