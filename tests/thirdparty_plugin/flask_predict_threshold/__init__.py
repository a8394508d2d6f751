"""Answers 1 for every value above the threshold stored in ``threshold.json``."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

import numpy as np

from flask_predict.plugin import ModelMetadata, Predictor, Signature, TensorSpec


class ThresholdPredictor(Predictor):
    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> ThresholdPredictor:
        with open(os.path.join(model_dir, "threshold.json")) as file:
            return cls(float(json.load(file)["threshold"]))

    def metadata(self) -> ModelMetadata:
        return ModelMetadata("threshold", {"serving_default": Signature(
            inputs=(TensorSpec("x", "FP64", (-1,)),),
            outputs=(TensorSpec("above", "INT64", (-1,)),))})

    def predict_tensors(self, inputs: Mapping[str, np.ndarray],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, np.ndarray]:
        (values,) = inputs.values()
        return {"above": (values > self.threshold).astype(np.int64)}
