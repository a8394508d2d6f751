"""A classifier's ``predict`` and ``predict_proba`` from one pass of the model, where that is
exactly what its own two methods answer.

Which estimators qualify is decided when the model loads, from the methods its class really
has (a subclass that overrides one is left alone), and confirmed on sample rows:

* logistic regression: scores ``X @ coef_.T + intercept_`` once; the labels from the scores
  as ``predict`` decides, the probabilities from the scores as ``predict_proba`` computes
  them (never labels from the probabilities: ``expit`` rounds scores near 0 to 0.5);
* decision trees and forests (random, extra): ``predict`` *is* the first highest of
  ``predict_proba``'s columns in scikit-learn's own code;
* a pipeline of transformers ending in one of those: the transformers run once.

Every other estimator (SVC with Platt scaling, gradient boosting, naive Bayes, ...) keeps
its own two methods: for those, the labels are not a function of the probabilities.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Callable

import numpy as np

from flask_predict.plugin import Tensor

from .linear import is_linear_classifier, labels, plain_finite, scores

logger = logging.getLogger(__name__)

OnePass = Callable[[Tensor], tuple[Tensor, Tensor]]
"""Feature rows -> (``predict``, ``predict_proba``)."""


def one_pass(model: Any, named: bool = False) -> OnePass | None:
    """The one-pass function of *model*, checked on sample rows; ``None`` when the model
    must run its own ``predict`` and ``predict_proba``.

    *named*: the model was fitted on named columns, and the caller hands it the matrix of
    exactly those, of finite floats only. Only logistic regression qualifies then: every
    other derivation calls scikit-learn with that matrix, which warns that it has no
    feature names."""
    found = derive_named(model) if named else derive(model)
    if found is None or not _agrees(model, found):
        return None
    return found


def derive(model: Any) -> OnePass | None:
    """The one-pass function of *model*'s estimator type, unchecked; ``None`` if none."""
    from sklearn.pipeline import Pipeline

    if type(model) is Pipeline:
        return _pipeline(model)
    if _is_logistic(model):
        return _logistic_pass(model)
    if _predicts_argmax_of_proba(model):
        return lambda rows: _argmax_of_proba(model, model.predict_proba(rows))
    return None


def derive_named(model: Any) -> OnePass | None:
    """:func:`derive` for a model fitted on named columns: logistic regression only."""
    return _logistic_pass(model) if _is_logistic(model, named=True) else None


def _logistic_pass(model: Any) -> OnePass:
    from scipy.special import expit  # imported once here, not on every call
    from sklearn.utils.extmath import softmax

    return lambda rows: _logistic(model, rows, expit, softmax)


def _is_logistic(model: Any, named: bool = False) -> bool:
    """A LogisticRegression whose ``predict_proba`` is scikit-learn's: ``expit`` of the one
    score for two classes, ``softmax`` of the scores for more."""
    from sklearn.linear_model import LogisticRegression

    if not is_linear_classifier(model, named):
        return False
    cls = type(model)
    n_classes, n_scores = len(model.classes_), model.coef_.shape[0]
    return (cls.predict_proba is LogisticRegression.predict_proba
            and cls._predict_proba_lr is LogisticRegression._predict_proba_lr
            and ((n_classes == 2 and n_scores == 1) or n_classes == n_scores > 2))


def _logistic(model: Any, rows: Tensor, expit: Callable[..., Tensor],
              softmax: Callable[..., Tensor]) -> tuple[Tensor, Tensor]:
    if not plain_finite(rows):  # scikit-learn's own checks and errors
        return np.asarray(model.predict(rows)), np.asarray(model.predict_proba(rows))
    decision = scores(model, rows)
    predicted = labels(model, decision)
    if decision.shape[1] == 1:  # [1 - p, p], as np.stack writes it (without its overhead)
        both = np.empty((len(decision), 2), dtype=decision.dtype)
        positive = expit(decision[:, 0], out=both[:, 1])
        np.subtract(1, positive, out=both[:, 0])
        return predicted, both
    probabilities: Tensor = softmax(decision, copy=False)
    return predicted, probabilities


def _predicts_argmax_of_proba(model: Any) -> bool:
    """A single-output tree or forest classifier whose two methods are scikit-learn's."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    cls = type(model)
    own = any(getattr(cls, "predict", None) is family.predict
              and getattr(cls, "predict_proba", None) is family.predict_proba
              for family in (RandomForestClassifier, DecisionTreeClassifier))
    return own and getattr(model, "n_outputs_", None) == 1


def _argmax_of_proba(model: Any, probabilities: Tensor) -> tuple[Tensor, Tensor]:
    predicted: Tensor = model.classes_.take(np.argmax(probabilities, axis=1), axis=0)
    return predicted, probabilities


def _pipeline(model: Any) -> OnePass | None:
    """Pipeline.predict and predict_proba (the caller checked the type is Pipeline itself):
    the same transformers, then the final step."""
    final = derive(model.steps[-1][1])
    if final is None:
        return None
    transformers = [step for _, step in model.steps[:-1] if step not in (None, "passthrough")]

    def both(rows: Tensor) -> tuple[Tensor, Tensor]:
        for transformer in transformers:
            rows = transformer.transform(rows)
        return final(rows)
    return both


def _agrees(model: Any, found: OnePass) -> bool:
    """Whether *found* answers as the model's own methods on sample rows (random ones and
    all zeros): a guard against a library version that computes otherwise."""
    width = getattr(model, "n_features_in_", None)
    if not isinstance(width, int):
        return False
    rows = np.random.default_rng(0).normal(scale=3.0, size=(64, width))
    rows[0] = 0.0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            predicted, probabilities = found(rows)
            expected = np.asarray(model.predict(rows)), np.asarray(model.predict_proba(rows))
    except Exception:  # a model that cannot take plain numbers: its own methods answer
        return False
    same = all(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
               for a, b in zip((predicted, probabilities), expected))
    if not same:
        logger.warning("%s: predict and predict_proba run separately (their one-pass "
                       "derivation disagreed on sample rows)", type(model).__name__)
    return same
