"""XGBoost's answer for a few rows, computed in numpy from the model's trees, bit for bit.

Each ``XGBoosterPredictFromDense`` call costs tens of microseconds before any tree is walked
(it compiles a ``std::regex`` to read the device name, every call); for one row that is
most of the call. :class:`SmallBatchPredict` walks the trees itself: every split of every
tree is decided for all rows at once (one comparison per node and row), then each tree is
followed from its root, one gather per level, and the leaves are added in XGBoost's order
(the base margin, then tree by tree, in float32) and transformed with the C library's
``expf``, the function XGBoost calls.

It takes only what it reproduces exactly: ``gbtree`` models with numerical splits, one
output group or ``multi:softprob``, NaN as the missing value, the objectives in
:data:`TRANSFORMS`. :func:`small_batch_predict` builds one only when it gives the same bits
as XGBoost on random rows with missing values (checked when the model loads), so an
XGBoost release that computes otherwise falls back to XGBoost's own call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import logging
from typing import Any, Callable

import numpy as np
import xgboost as xgb

from flask_predict.plugin import Tensor

from .dense import DensePredict

logger = logging.getLogger(__name__)

MAX_CELLS = 8192
"""Rows times nodes up to which the walk here beats XGBoost's call (a 100-tree model of
1,227 nodes: 6 rows; ``benchmarks/tree_predictors.py``); larger batches go to XGBoost."""

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_expf = _libm.expf
_expf.restype, _expf.argtypes = ctypes.c_float, [ctypes.c_float]
_logf = _libm.logf
_logf.restype, _logf.argtypes = ctypes.c_float, [ctypes.c_float]
_f32 = np.float32


def expf(values: Tensor) -> Tensor:
    """The C library's ``expf`` of each float32 value (numpy's own ``exp`` may differ in the
    last bit)."""
    return np.array([_expf(v) for v in values.ravel().tolist()],
                    dtype=np.float32).reshape(values.shape)


def sigmoid(margin: Tensor) -> Tensor:
    """XGBoost's ``common::Sigmoid``: ``1 / (expf(min(-x, 88.7)) + 1 + 1e-16)`` in float32."""
    denominator = (expf(np.minimum(-margin, _f32(88.7))) + _f32(1.0)) + _f32(1e-16)
    result: Tensor = _f32(1.0) / denominator
    return result


def softmax(margin: Tensor) -> Tensor:
    """XGBoost's ``common::Softmax`` of each row: ``expf(x - max)`` over their sum, the sum
    taken in float64 from the first class on."""
    shifted = expf(margin - margin.max(axis=1, keepdims=True))
    total = np.cumsum(shifted.astype(np.float64), axis=1)[:, -1:].astype(np.float32)
    result: Tensor = shifted / total
    return result


def _logistic_margin(base: float) -> float:
    """``ProbToMargin`` of a logistic objective: ``-logf(1 / base - 1)`` in float32."""
    return float(-_f32(_logf(float(_f32(1.0) / _f32(base) - _f32(1.0)))))


Transform = Callable[[Tensor], Tensor]
TRANSFORMS: dict[str, tuple[Callable[[float], float], Transform | None]] = {
    "reg:squarederror": (float, None),
    "reg:pseudohubererror": (float, None),
    "reg:absoluteerror": (float, None),
    "binary:logitraw": (float, None),
    "binary:logistic": (_logistic_margin, sigmoid),
    "reg:logistic": (_logistic_margin, sigmoid),
    "multi:softprob": (float, softmax),
}
"""Objective -> (base score to base margin, margin to prediction)."""


class SmallBatchPredict:
    """XGBoost's ``inplace_predict(rows, missing=NaN)`` (or its margin) for a float32 matrix
    of a few rows, from the trees' arrays."""

    def __init__(self, model: dict[str, Any], margin: bool = False) -> None:
        learner = model["learner"]
        objective = learner["objective"]["name"]
        to_margin, transform = TRANSFORMS[objective]
        parameters = learner["learner_model_param"]
        self.groups = max(1, int(parameters.get("num_class", "0") or 0))
        base = [_f32(to_margin(score)) for score in _scores(parameters["base_score"])]
        if len(base) not in (1, self.groups):
            raise ValueError(f"{len(base)} base scores for {self.groups} outputs")
        base = base * (self.groups // len(base))
        self.transform = None if margin else transform
        booster = learner["gradient_booster"]["model"]
        trees = booster["trees"]
        # nodes 0..groups-1 are leaves holding the base margins: the first term of each
        # group's sum
        groups = self.groups
        sizes = [1] * groups + [len(tree["left_children"]) for tree in trees]
        self.roots = np.cumsum([0] + sizes[:-1]).astype(np.int32)
        self.nodes = int(sum(sizes))
        tree_group = np.asarray(booster["tree_info"], dtype=np.intp)
        self.group_terms = [np.concatenate(([group], groups + np.flatnonzero(tree_group == group)))
                            for group in range(groups)]
        left: list[Tensor] = [np.arange(groups)]
        feature: list[Tensor] = [np.zeros(groups, dtype=np.intp)]
        threshold: list[Tensor] = [np.full(groups, np.inf)]
        default_right: list[Tensor] = [np.zeros(groups, dtype=bool)]
        leaf_value: list[Tensor] = [np.array(base, dtype=np.float32)]
        for root, tree in zip(self.roots[groups:].tolist(), trees):
            children = np.asarray(tree["left_children"], dtype=np.intp)
            leaf = children == -1
            ids = np.arange(root, root + children.size)
            left.append(np.where(leaf, ids, children + root))
            feature.append(np.where(leaf, 0, tree["split_indices"]))
            # a leaf leads to itself: no value is >= inf, and a missing value goes left
            threshold.append(np.where(leaf, np.inf, tree["split_conditions"]))
            default_right.append(~np.asarray(tree["default_left"], dtype=bool) & ~leaf)
            leaf_value.append(np.where(leaf, tree["split_conditions"], 0.0))
            right = np.asarray(tree["right_children"], dtype=np.intp)
            if not np.array_equal(right[~leaf], children[~leaf] + 1):
                raise ValueError("a right child that does not follow its left sibling")
        self.left = np.concatenate(left).astype(np.int32)
        self.feature = np.concatenate(feature).astype(np.intp)
        self.threshold = np.concatenate(threshold).astype(np.float32)
        self.default_right = np.concatenate(default_right).astype(bool)
        self.leaf_value = np.concatenate(leaf_value).astype(np.float32)
        self.depth = max(_depth(tree) for tree in trees)
        self.max_rows = max(1, MAX_CELLS // self.nodes)

    def __call__(self, matrix: Tensor) -> Tensor:
        """Predictions for the float32 rows of *matrix*: a new float32 array shaped as
        XGBoost shapes it ((rows,) or (rows, classes))."""
        rows = matrix.shape[0]
        values = matrix.take(self.feature, axis=1)  # every node's feature, for every row
        go_right = values >= self.threshold
        if np.isnan(matrix).any():
            go_right |= np.isnan(values) & self.default_right
        step = (self.left + go_right).ravel()  # each node's next node, row after row
        at = self.roots
        if rows == 1:
            for _ in range(self.depth):
                at = step[at]
        else:
            offsets = (np.arange(rows, dtype=np.int32) * np.int32(self.nodes))[:, None]
            for _ in range(self.depth):
                at = step[at + offsets]
        leaves = np.broadcast_to(self.leaf_value[at], (rows, self.roots.size))
        margin = np.empty((rows, self.groups), dtype=np.float32)
        for group, terms in enumerate(self.group_terms):
            column = leaves if self.groups == 1 else leaves[:, terms]
            margin[:, group] = np.cumsum(column, axis=1, dtype=np.float32)[:, -1]
        result = margin if self.transform is None else self.transform(margin)
        return result[:, 0].copy() if self.groups == 1 else result


def fastest(booster: xgb.Booster, missing: float = np.nan,
            iteration_range: tuple[int, int] = (0, 0), margin: bool = False
            ) -> Callable[[Tensor], Tensor]:
    """``DensePredict(booster, missing, iteration_range, margin)``, with batches of up to
    :attr:`SmallBatchPredict.max_rows` rows walked here where that gives the same bits."""
    dense = DensePredict(booster, missing, iteration_range, margin)
    walk = small_batch_predict(booster, missing, iteration_range, margin, dense)
    if walk is None:
        return dense
    limit, width = walk.max_rows, booster.num_features()

    def predict(matrix: Tensor) -> Tensor:
        if 0 < matrix.shape[0] <= limit and matrix.shape[1] == width:
            return walk(matrix)
        return dense(matrix)
    return predict


def _scores(text: str) -> list[float]:
    """``"5E-1"``, or XGBoost 3's vector: ``"[5E-1]"``, one per class ``"[2E-2,...]"``."""
    value = json.loads(text) if text.startswith("[") else float(text)
    return [float(v) for v in value] if isinstance(value, list) else [float(value)]


def _depth(tree: dict[str, Any]) -> int:
    """Edges on the longest path from the root to a leaf."""
    left, right = tree["left_children"], tree["right_children"]
    depth, level = 0, [0]
    while True:
        level = [c for node in level if left[node] != -1 for c in (left[node], right[node])]
        if not level:
            return depth
        depth += 1


def small_batch_predict(booster: xgb.Booster, missing: float, iteration_range: tuple[int, int],
                        margin: bool, reference: Callable[[Tensor], Tensor]
                        ) -> SmallBatchPredict | None:
    """The small-batch walk of *booster*, or ``None`` where it cannot answer exactly what
    *reference* (XGBoost's own call with the same settings) answers: another booster, missing
    value, iteration range, objective or split type, a model of more than :data:`MAX_CELLS`
    nodes, or other bits on random rows."""
    if not np.isnan(missing) or tuple(iteration_range) != (0, 0):
        return None
    try:
        model = json.loads(bytes(booster.save_raw("json")))
        learner = model["learner"]
        gbm = learner["gradient_booster"]
        if gbm["name"] != "gbtree" or learner["objective"]["name"] not in TRANSFORMS:
            return None
        if int(learner["learner_model_param"].get("num_target", "1") or 1) != 1:
            return None
        trees = gbm["model"]["trees"]
        if not trees or any(any(t["split_type"]) or t["categories"] for t in trees):
            return None
        if any(int(t["tree_param"].get("size_leaf_vector", "1") or 1) > 1 for t in trees):
            return None
        if sum(len(t["left_children"]) for t in trees) > MAX_CELLS:
            return None  # one row already costs more here than XGBoost's call
        walk = SmallBatchPredict(model, margin)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        logger.debug("xgboost: no small-batch walk for this model: %s", exc)
        return None
    n_features = booster.num_features()
    if walk.feature.size and int(walk.feature.max()) >= n_features:
        return None
    for sample in _samples(walk, n_features):
        if not _same(walk(sample), reference(sample)):
            logger.info("xgboost: the small-batch walk differs from XGBoost for this model; "
                        "XGBoost's own call answers every batch")
            return None
    return walk


def _samples(walk: SmallBatchPredict, n_features: int) -> list[Tensor]:
    """Rows that reach every side of the splits: each feature at, just under and just over
    the model's thresholds, random values and NaN (missing)."""
    rng = np.random.default_rng(0)
    cuts = walk.threshold[np.isfinite(walk.threshold)]
    if not cuts.size:
        cuts = np.zeros(1, dtype=np.float32)
    count = 256
    picked = rng.choice(cuts, size=(count, n_features))
    nudged = np.where(rng.random(picked.shape) < 0.5, np.nextafter(picked, -np.inf),
                      np.nextafter(picked, np.inf))
    x = np.where(rng.random(picked.shape) < 0.3, nudged, picked).astype(np.float32)
    x = np.where(rng.random(x.shape) < 0.2, rng.normal(scale=3, size=x.shape), x)
    x[rng.random(x.shape) < 0.2] = np.nan
    x = np.ascontiguousarray(x, dtype=np.float32)
    step = walk.max_rows
    return [x[i:i + step] for i in range(0, count, step)] + [x[:1]]


def _same(got: Tensor, expected: Tensor) -> bool:
    return (got.dtype == expected.dtype and got.shape == expected.shape
            and bool(np.array_equal(got.view(np.uint32), expected.view(np.uint32))))
