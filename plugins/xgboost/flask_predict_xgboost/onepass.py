"""Every output of an XGBoost model from one prediction, where that is exactly what the
model's own methods answer.

A classifier's ``predict`` and ``predict_proba`` both start from the same call
(``XGBModel.predict``: the class probabilities) and differ only in what they make of it
afterwards; :func:`one_pass` makes that call once (:func:`small.fastest`: XGBoost's own C
call, or for a few rows the same bits from the trees' arrays) and derives both answers the
way XGBoost's scikit-learn wrapper does. It does so only for the model types
whose methods are XGBoost's own and whose derivation is known; every other model is left to
its own methods.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import xgboost as xgb

from flask_predict.plugin import Tensor

from .small import fastest

OnePass = Callable[[Tensor], dict[str, Tensor]]
"""C-contiguous float32 rows -> every output of the model, by name."""


def one_pass(model: xgb.Booster | xgb.XGBModel) -> OnePass | None:
    """The one-pass function of *model*, or ``None`` when only its own methods answer
    exactly as it does (a subclass that overrides them, ``gblinear`` through the wrapper,
    a custom objective, ``multi:softmax``, multi-label classifiers)."""
    if isinstance(model, xgb.Booster):
        dense = fastest(model)  # Booster.inplace_predict(rows, missing=NaN)
        return lambda rows: {"predict": dense(rows)}
    cls = type(model)
    if not model._can_use_inplace_predict():  # gblinear: the wrapper builds a DMatrix
        return None
    try:
        begin, end = model._get_iteration_range(None)
        missing = float(model.missing)
    except (AttributeError, TypeError, ValueError):
        return None
    # XGBModel.predict(rows): an in-place prediction with the wrapper's settings
    raw = fastest(model.get_booster(), missing, (int(begin), int(end)))
    if isinstance(model, xgb.XGBClassifier):
        if (cls.predict is not xgb.XGBClassifier.predict
                or cls.predict_proba is not xgb.XGBClassifier.predict_proba):
            return None
        return _classifier(model, raw)
    if cls.predict is xgb.XGBModel.predict and isinstance(model, xgb.XGBRegressor):
        return lambda rows: {"predict": raw(rows)}
    return None


def _classifier(model: xgb.XGBClassifier, raw: Callable[[Tensor], Tensor]) -> OnePass | None:
    """``XGBClassifier.predict`` and ``predict_proba`` from one ``XGBModel.predict``, as
    XGBoost writes them: binary (``binary:logistic``), a probability over 0.5 is class 1
    and the probabilities are ``[1 - p, p]``; multiclass (``multi:softprob``), the first
    highest probability's index and the probabilities as they are."""
    objective = model.objective
    n_classes = int(getattr(model, "n_classes_", 0))
    if objective == "binary:logistic" and n_classes == 2:
        def binary(rows: Tensor) -> dict[str, Tensor]:
            probability = raw(rows)
            if probability.ndim != 1:  # several targets (multi-label): the wrapper's own
                return {"predict": np.asarray(model.predict(rows)),
                        "predict_proba": np.asarray(model.predict_proba(rows))}
            labels = np.repeat(0, probability.shape[0])
            labels[probability > 0.5] = 1
            both: Tensor = np.vstack((1.0 - probability, probability)).transpose()
            return {"predict": labels, "predict_proba": both}
        return binary
    if objective == "multi:softprob" and n_classes > 2:
        def multiclass(rows: Tensor) -> dict[str, Tensor]:
            probabilities = raw(rows)
            if probabilities.ndim == 1:  # an empty batch: no row, one column per class
                return {"predict": np.empty((0,), dtype=np.int64),
                        "predict_proba": np.empty((0, n_classes), dtype=np.float32)}
            return {"predict": np.argmax(probabilities, axis=1),
                    "predict_proba": probabilities}
        return multiclass
    return None
