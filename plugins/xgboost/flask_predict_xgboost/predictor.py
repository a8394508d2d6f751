"""XGBoost predictor: a native Booster (``model.bst``, ``model.json``, ``model.ubj``) or a
pickled Booster or scikit-learn wrapper (``model.joblib``, ``model.pkl``).

NaN and JSON ``null`` are *missing* values (``missing=NaN``), never 0. A row wider or
narrower than the model's feature count is refused: XGBoost itself silently reads a narrow
row's absent trailing features as missing.

A model without feature names takes one input, ``inputs`` (``[-1, n_features]``); a model
with them takes one input per feature, categorical features by their categories
(:mod:`.columns`), turned into the same float32 matrix.

Explanations (``explain``) are XGBoost's own TreeSHAP contributions to the margin
(:mod:`.explain`).

Predictions go through :func:`onepass.one_pass` where it answers exactly as the model's own
methods (a Booster, XGBRegressor, binary and multiclass XGBClassifier): one XGBoost call per
request gives every output, through :class:`dense.DensePredict`, XGBoost's own in-place
prediction without its Python wrapper's per-call work.
"""

from __future__ import annotations

import json
import os
import pickle
import re
from typing import Any, Mapping, Sequence

import joblib
import numpy as np
import xgboost as xgb

from flask_predict import (Explanation, FailedPrecondition, ModelMetadata, Predictor,
                           Signature, TensorSpec)
from flask_predict.codecs import NUMPY_TO_V2
from flask_predict.models.artifacts import UNPICKLING_ERRORS, empty, unreadable_pickle
from flask_predict.errors import UnreadableModel
from flask_predict.models.mlmodel import MLflowModel
from flask_predict.core.tabular import (code_matrix, feature_rows, read_columns, refused_feature,
                                        refused_number, tabular_signature)
from flask_predict.types import DEFAULT_SIGNATURE, Tensor

from .columns import feature_properties, layout
from .explain import explain
from .onepass import one_pass

NATIVE_FILES = ("model.bst", "model.json", "model.ubj")
INPUT = "inputs"
"""The one input of a model without feature names."""
PICKLE_FILES = ("model.joblib", "model.pkl")
SOURCE_LINE = re.compile(r"^(?:\[\d\d:\d\d:\d\d\] )?\S+\.(?:cc|h):\d+: ")
"""Where in XGBoost's own sources a message comes from (its build machine's path)."""


class XGBoostPredictor(Predictor):
    """An XGBoost model loaded from a version folder."""

    instance_outputs = ("predict",)

    def __init__(self, model: xgb.Booster | xgb.XGBModel, outputs: Sequence[str] | None = None,
                 nthread: int | None = None) -> None:
        self.model = model
        self.booster = model if isinstance(model, xgb.Booster) else model.get_booster()
        self.nthread = nthread
        self.saved_threads = _saved_threads(self.booster)
        # the checks on sample rows below (small.py) run on one thread: in the gunicorn
        # master an OpenMP pool would hang every worker forked after it (libgomp)
        self.booster.set_param({"nthread": 1})
        self.n_features = self.booster.num_features()
        self.methods: tuple[str, ...] = ("predict",)
        if isinstance(model, xgb.XGBModel) and hasattr(model, "predict_proba"):
            self.methods = ("predict", "predict_proba")
        unknown = [o for o in outputs or () if o not in self.methods]
        if unknown:
            raise TypeError(f"unknown output(s) {unknown}; this model has {list(self.methods)}")
        self.default_outputs = tuple(outputs) if outputs else self.methods
        self.layout = layout(self.booster)
        """One column per named feature; ``None``: one matrix of numbers."""
        self._metadata = self._describe()
        self.one_pass = one_pass(model)
        """Every output from one XGBoost call; ``None``: the model's own methods."""
        self.after_fork()

    def after_fork(self) -> None:
        """The model's ``nthread`` option, else this process's thread count
        (``OMP_NUM_THREADS``: one in the gunicorn master, which loads shared models; each
        worker's share of the cores in a worker), else what the model was saved with."""
        threads = (self.nthread or int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
                   or self.saved_threads)
        self.booster.set_param({"nthread": threads})  # 0: XGBoost's default, every core
        self.threads = threads
        """The threads of a prediction, and of building an explanation's matrix."""

    @classmethod
    def from_path(cls, model_dir: str, outputs: Sequence[str] | None = None,
                  nthread: int | None = None, **options: Any) -> XGBoostPredictor:
        if options:
            raise TypeError(f"unknown XGBoost option(s) {sorted(options)}")
        return cls(load_model(model_dir), outputs, nthread)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, outputs: Sequence[str] | None = None,
                    nthread: int | None = None, **options: Any) -> XGBoostPredictor:
        """The ``xgboost`` flavor: its ``data`` file (UBJSON, JSON), as a Booster or as the
        scikit-learn class it was saved from (``model_class``)."""
        if options:
            raise TypeError(f"unknown XGBoost option(s) {sorted(options)}")
        conf = model.flavor("xgboost")
        path = model.file(conf.get("data"))
        booster = _native_booster(path)
        wrapper = str(conf.get("model_class") or "xgboost.core.Booster").rpartition(".")
        loaded: xgb.Booster | xgb.XGBModel = booster
        if wrapper[2] != "Booster":
            kind = getattr(xgb, wrapper[2], None) if wrapper[0].startswith("xgboost") else None
            if not (isinstance(kind, type) and issubclass(kind, xgb.XGBModel)):
                raise UnreadableModel(f"MLmodel names model_class {''.join(wrapper)!r}, "
                                      "not an XGBoost class")
            loaded = kind()
            loaded.load_model(path)
        return model.answering(cls(loaded, model.outputs(outputs), nthread))

    def _describe(self) -> ModelMetadata:
        config = json.loads(self.booster.save_config())["learner"]
        objective = config["objective"]["name"]
        num_class = int(config["learner_model_param"].get("num_class", "0") or 0)
        properties: dict[str, Any] = {"objective": objective, "n_features": self.n_features,
                                      "booster": type(self.model).__name__}
        if isinstance(self.model, xgb.XGBModel):
            classes = getattr(self.model, "classes_", None)
            label_type = "FP32"
            if classes is not None:
                properties["classes"] = np.asarray(classes).tolist()
                label_type = NUMPY_TO_V2.get(np.asarray(classes).dtype, "INT64")
            outputs = [TensorSpec("predict", label_type, (-1,))]
            if "predict_proba" in self.methods:
                width = len(classes) if classes is not None else -1
                outputs.append(TensorSpec("predict_proba", "FP32", (-1, width)))
        else:
            shape = (-1, num_class) if objective in ("multi:softprob",) else (-1,)
            outputs = [TensorSpec("predict", "FP32", shape)]
        if self.layout is not None:
            properties.update(feature_properties(self.booster, self.layout))
            signature = tabular_signature(self.layout, outputs)
        else:
            signature = Signature(inputs=(TensorSpec(INPUT, "FP32", (-1, self.n_features)),),
                                  outputs=tuple(outputs))
        return ModelMetadata("xgboost", {DEFAULT_SIGNATURE: signature}, properties=properties)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        return self._predict(self._features(inputs), outputs)

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """TreeSHAP attributions of the model's margin (:mod:`.explain`)."""
        features = self._features(inputs)
        try:
            return explain(self.booster, features, self.threads, self.layout, INPUT,
                           self._metadata.properties.get("classes"))
        except xgb.core.XGBoostError as exc:
            raise FailedPrecondition(f"Explanation failed: {_first_line(exc)}")

    def _features(self, inputs: Mapping[str, Tensor]) -> Tensor:
        """The C-contiguous float32 rows the model predicts from; a value past float32 (or
        infinite) is refused: NaN or null mark a missing value."""
        if self.layout is not None:
            features = code_matrix(read_columns(inputs, self.layout), self.layout, np.float32)
            refused = refused_number({column.name: features[:, index] for index, column
                                      in enumerate(self.layout)}, missing=False, infinite=True)
        else:
            features = feature_rows(inputs, self._metadata.signature.inputs[0])
            features = np.require(features, np.float32, ("C", "A"))
            refused = refused_feature(features, missing=False, infinite=True)
        if refused is not None:  # XGBoost's own refusal names no feature
            raise refused
        return features

    def _predict(self, features: Tensor, outputs: Sequence[str] | None) -> dict[str, Tensor]:
        """Every output asked for (``None``: the defaults) from C-contiguous float32 rows."""
        wanted = outputs or self.default_outputs
        try:
            if self.one_pass is not None:
                every = self.one_pass(features)
                return {method: every[method] for method in wanted}
            return {method: np.asarray(getattr(self.model, method)(features))
                    for method in wanted}
        except xgb.core.XGBoostError as exc:
            raise FailedPrecondition(f"Prediction failed: {_words(exc)}")


def load_model(model_dir: str) -> xgb.Booster | xgb.XGBModel:
    """A native Booster file first, else a joblib/pickle of a Booster or wrapper."""
    for name in NATIVE_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            return _native_booster(path)
    for name in PICKLE_FILES:
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            if name.endswith(".joblib"):
                model = joblib.load(path)
            else:
                with open(path, "rb") as file:
                    model = pickle.load(file)
        except (KeyError, pickle.UnpicklingError, EOFError) as exc:
            if empty(path) or not _native_format(path):
                raise unreadable_pickle(path, exc) from None
            return _native_booster(path)  # a native model under pickle's name
        except UNPICKLING_ERRORS as exc:
            raise unreadable_pickle(path, exc) from None
        if not isinstance(model, (xgb.Booster, xgb.XGBModel)):
            raise TypeError(f"{path} holds a {type(model).__module__}.{type(model).__name__}, "
                            "not an XGBoost model")
        return model
    raise FileNotFoundError(f"no XGBoost model file in {model_dir} (looked for "
                            f"{list(NATIVE_FILES + PICKLE_FILES)})")


def _native_booster(path: str) -> xgb.Booster:
    """Load a JSON or UBJSON model file whatever its name (XGBoost sniffs the content).

    :raises UnreadableModel: the file is empty (XGBoost would abort the process) or XGBoost
        cannot parse it.
    """
    with open(path, "rb") as file:
        data = bytearray(file.read())
    if not data:
        raise UnreadableModel("the file is empty")
    booster = xgb.Booster()
    try:
        booster.load_model(data)
    except xgb.core.XGBoostError as exc:
        raise UnreadableModel(f"not an XGBoost model (JSON or UBJSON): {_words(exc)}") from None
    return booster


def _native_format(path: str) -> bool:
    """Whether *path* starts as XGBoost's JSON or UBJSON does (``{``)."""
    with open(path, "rb") as file:
        return file.read(1) == b"{"


def _saved_threads(booster: xgb.Booster) -> int:
    """The ``nthread`` a model was saved with (0: XGBoost's default)."""
    try:
        generic = json.loads(booster.save_config())["learner"].get("generic_param", {})
        return int(generic.get("nthread", "0") or 0)
    except (xgb.core.XGBoostError, KeyError, ValueError):
        return 0


def _words(exc: Exception) -> str:
    """XGBoost's message in one line, without its time or where in its sources it was."""
    return SOURCE_LINE.sub("", _first_line(exc))


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "Check failed" in line or "contains" in line:
            return line.split("] ", 1)[-1].strip()
    return lines[0] if lines else type(exc).__name__
