"""Linear classifiers' ``predict`` without scikit-learn's per-call input checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from flask_predict.plugin import FLOATS, Tensor


def is_linear_classifier(model: Any, named: bool = False) -> bool:
    """A linear classifier (LogisticRegression, SGDClassifier, ...) whose ``predict`` is
    scikit-learn's own, fitted without feature names (those make scikit-learn warn on a
    matrix), or with them where *named*: the caller hands it the matrix of exactly those
    columns, in order, and never calls scikit-learn with it."""
    from sklearn.linear_model import LogisticRegression

    cls = type(model)
    return (getattr(cls, "predict", None) is LogisticRegression.predict
            and getattr(cls, "decision_function", None) is LogisticRegression.decision_function
            and (named or getattr(model, "feature_names_in_", None) is None)
            and isinstance(getattr(model, "coef_", None), np.ndarray)
            and model.coef_.ndim == 2
            and isinstance(getattr(model, "classes_", None), np.ndarray))


def scores(model: Any, features: Tensor) -> Tensor:
    """``decision_function`` as scikit-learn computes it, ``X @ coef_.T + intercept_``, kept
    two-dimensional (one column for a binary model)."""
    result: Tensor = features @ model.coef_.T + model.intercept_
    return result


def labels(model: Any, decision: Tensor) -> Tensor:
    """``predict`` from :func:`scores`, as scikit-learn decides: the positive class where a
    single score is over 0, else the first highest score."""
    if decision.shape[1] == 1:
        indices = (decision[:, 0] > 0).astype(np.intp)
    else:
        indices = decision.argmax(axis=1)
    taken: Tensor = model.classes_.take(indices, axis=0)
    return taken


def linear_predict(model: Any, features: Tensor) -> Tensor:
    """``model.predict(features)`` for a linear classifier, without scikit-learn's per-call
    input checks, which cost about 140 us a call, 50 times the arithmetic for one row. The
    caller has checked the shape, and that the values are finite floats
    (:func:`plain_finite`; scikit-learn's own errors come otherwise)."""
    return labels(model, scores(model, features))


def plain_finite(features: Tensor) -> bool:
    """Finite float64 or float32 values: what scikit-learn's checks pass unchanged to the
    same ``X @ coef_.T`` (float32 rows are multiplied as they are, as there)."""
    return features.dtype in FLOATS and bool(np.isfinite(features).all())

