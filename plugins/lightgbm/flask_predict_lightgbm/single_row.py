"""LightGBM's own single-row prediction, without its Python wrapper's per-call work.

``Booster.predict`` spends most of a one-row call in Python: it builds a predictor object,
copies its parameters, checks the input's type and asks the C library how long the answer
will be. LightGBM's C API has a call for this case: ``LGBM_BoosterPredictForMatSingleRowFast``
reads one row of float64 features with the settings fixed once, when the model loads
(``LGBM_BoosterPredictForMatSingleRowFastInit``). It walks the same trees with the same
arithmetic as ``Booster.predict``: the answer is LightGBM's own, bit for bit.

The C library keeps one single-row predictor per model and kind of prediction, with its
buffers: calls are taken one at a time (a lock; ctypes lets threads run during the call).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm import basic

from flask_predict.plugin import Tensor

PREDICT_NORMAL = 0
"""``C_API_PREDICT_NORMAL``: the model's output (probabilities for a classifier)."""
FLOAT64 = 1
"""``C_API_DTYPE_FLOAT64``."""
LIB: Any = basic._LIB  # type: ignore[attr-defined]  # the C library; lightgbm exports none


class SingleRowPredict:
    """``booster.predict(rows, num_iteration=iterations)`` for a few float64 rows, one C
    call per row."""

    def __init__(self, booster: lgb.Booster, iterations: int, outputs: int) -> None:
        self.booster = booster  # the handle below lives as long as the Booster
        self.width = booster.num_feature()
        self.outputs = outputs
        self._lock = threading.Lock()
        self._call = LIB.LGBM_BoosterPredictForMatSingleRowFast
        self._handle = ctypes.c_void_p()
        basic._safe_call(LIB.LGBM_BoosterPredictForMatSingleRowFastInit(
            booster._handle, ctypes.c_int(PREDICT_NORMAL), ctypes.c_int(0),
            ctypes.c_int(iterations), ctypes.c_int(FLOAT64), ctypes.c_int32(self.width),
            basic._c_str("num_threads=1"), ctypes.byref(self._handle)))

    def __call__(self, matrix: Tensor) -> Tensor:
        """The predictions for *matrix* (C-contiguous float64 rows): ``[N]``, or ``[N, K]``
        for a model with K outputs."""
        if matrix.dtype != np.float64 or not matrix.flags.c_contiguous:
            raise ValueError("SingleRowPredict takes a C-contiguous float64 matrix")
        out = np.empty((matrix.shape[0], self.outputs), dtype=np.float64)
        length = ctypes.c_int64()
        with self._lock:
            for index in range(matrix.shape[0]):
                basic._safe_call(self._call(
                    self._handle, ctypes.c_void_p(matrix[index].ctypes.data),
                    ctypes.byref(length),
                    ctypes.c_void_p(out[index].ctypes.data)))
        return out[:, 0] if self.outputs == 1 else out

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.value:
            LIB.LGBM_FastConfigFree(handle)
