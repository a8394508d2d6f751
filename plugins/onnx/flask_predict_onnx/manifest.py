"""What flask-predict may know about this plugin without importing ONNX Runtime."""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.models.plugins import Manifest

MODEL_FILE = "model.onnx"
"""The model file: what ``torch.onnx.export``, Keras's ``export(format="onnx")``, tf2onnx
and skl2onnx write, named as Triton and KServe name it."""


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A ``model.onnx`` file."""
    return 0.9 if os.path.isfile(os.path.join(model_dir, MODEL_FILE)) else 0.0


MANIFEST = Manifest(options=frozenset({"outputs", "intra_op_num_threads"}), detect=detect,
                    mlflow_flavors=frozenset({"onnx"}))
"""Not shared: each worker creates its own session after the fork, its thread pools sized
to the worker."""
