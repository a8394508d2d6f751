"""ONNX Runtime predictor: ``model.onnx`` as PyTorch's exporter, Keras, tf2onnx and skl2onnx
write it.

The model's declared inputs and outputs are its signature on every protocol: names, types
(:mod:`.tensors`) and shapes, a dynamic dimension (the batch axis PyTorch's exporter names)
as ``-1``. A request sends every declared input by name (a model of one input takes it
under any name); each output it asks for is computed, every one by default.

A session is created in each worker (the manifest does not share ONNX models): ONNX
Runtime's thread pools do not survive a fork. Its intra-op pool takes the model's
``intra_op_num_threads`` setting, else the worker's thread count
(:func:`flask_predict.core.runtime.process_threads`); operators run one after another.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import onnxruntime as ort

from flask_predict import (FailedPrecondition, InvalidInput, ModelMetadata, Predictor,
                           Signature, TensorSpec)
from flask_predict.core.runtime import process_threads
from flask_predict.models.mlmodel import MLflowModel
from flask_predict.types import DEFAULT_SIGNATURE, Tensor

from .manifest import MODEL_FILE
from .tensors import answer, feed, spec


class ONNXPredictor(Predictor):
    """An ONNX model in an ONNX Runtime session."""

    def __init__(self, session: ort.InferenceSession,
                 outputs: Sequence[str] | None = None) -> None:
        self.session = session
        self.inputs = tuple(spec(node) for node in session.get_inputs())
        self.outputs = tuple(spec(node) for node in session.get_outputs())
        names = [output.name for output in self.outputs]
        unknown = [o for o in outputs or () if o not in names]
        if unknown:
            raise TypeError(f"unknown output(s) {unknown}; this model has {names}")
        self.default_outputs = tuple(outputs) if outputs else tuple(names)
        meta = session.get_modelmeta()
        properties: dict[str, Any] = {"producer": meta.producer_name, "graph": meta.graph_name}
        if meta.custom_metadata_map:
            properties["custom_metadata"] = dict(meta.custom_metadata_map)
        self._metadata = ModelMetadata(
            "onnx", {DEFAULT_SIGNATURE: Signature(inputs=self.inputs, outputs=self.outputs)},
            properties=properties)

    @classmethod
    def from_path(cls, model_dir: str, outputs: Sequence[str] | None = None,
                  intra_op_num_threads: int | None = None, **options: Any) -> ONNXPredictor:
        if options:
            raise TypeError(f"unknown ONNX option(s) {sorted(options)}")
        path = os.path.join(model_dir, MODEL_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no {MODEL_FILE} in {model_dir}")
        return cls(_session(path, intra_op_num_threads), outputs)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, outputs: Sequence[str] | None = None,
                    intra_op_num_threads: int | None = None, **options: Any) -> ONNXPredictor:
        """The ``onnx`` flavor: its ``data`` file."""
        if options:
            raise TypeError(f"unknown ONNX option(s) {sorted(options)}")
        path = model.file(model.flavor("onnx").get("data"))
        return cls(_session(path, intra_op_num_threads), outputs)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        feeds = self._feeds(inputs)
        wanted = list(outputs or self.default_outputs)
        try:
            values = self.session.run(wanted, feeds)
        except ort.capi.onnxruntime_pybind11_state.InvalidArgument as exc:
            raise FailedPrecondition(f"Prediction failed: {_first_line(exc)}")
        return {name: answer(value) for name, value in zip(wanted, values)}

    def _feeds(self, inputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Every declared input from the request, as ONNX Runtime takes it."""
        if len(self.inputs) == 1 and len(inputs) == 1:
            (array,) = inputs.values()
            return {self.inputs[0].name: feed(array, self.inputs[0])}
        names = [want.name for want in self.inputs]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise InvalidInput(f"unknown input(s) {unknown}; the model's inputs are {names}")
        missing = [name for name in names if name not in inputs]
        if missing:
            raise InvalidInput(f"missing input(s) {missing}; the model's inputs are {names}")
        return {want.name: feed(inputs[want.name], want) for want in self.inputs}


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _session(path: str, intra_op_num_threads: int | None) -> ort.InferenceSession:
    """An ONNX Runtime session on the CPU with the process's thread budget."""
    settings = ort.SessionOptions()
    settings.intra_op_num_threads = intra_op_num_threads or process_threads() or 0
    settings.inter_op_num_threads = 1
    settings.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    settings.log_severity_level = 3  # errors only: its warnings are not the client's
    return ort.InferenceSession(path, settings, providers=["CPUExecutionProvider"])
