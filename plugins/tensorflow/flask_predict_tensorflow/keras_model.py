"""Keras predictor: a version folder holding one Keras file, loaded by Keras's own loader.

``keras.saving.load_model`` reads Keras 3's ``.keras`` files and the legacy HDF5 ``.h5``
files (Keras 2's included), without compiling (serving needs neither optimizer nor loss).
The model is called once per request through one ``tf.function`` traced at load, whose
input signature is the model's inputs, so no request traces it again.

The signature is the one ``model.export()`` gives the same model, the SavedModel TF Serving
would serve: one input per model input, named as the model names it (``keras.Input(name=...)``)
with its dtype and shape; outputs named by their keys when the model returns a dict, else
``output_0``, ``output_1``... in the model's order. A client written against TF Serving
serving that export works unchanged.

Shapes are checked against the model's (a Keras layer needs them), unlike a SavedModel's.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import keras
import numpy as np
import tensorflow as tf

from flask_predict.plugin import (Classification, ConfigError, Example, InferenceRequest,
                                  InvalidInput, ModelMetadata, Predictor, Signature, Tensor,
                                  TensorSpec, native_call)

from .devices import configure_devices
from .manifest import keras_file
from .tensors import OP_ERRORS_400, datatype, first_line, fit_value
from .warmup import read_warmup_requests

SIGNATURE = "serving_default"
"""The model's one signature, named as ``model.export()`` names it."""


class KerasPredictor(Predictor):
    """One Keras model version (a ``.keras`` or ``.h5`` file) in this worker."""

    def __init__(self, model_dir: str, file_name: str) -> None:
        if keras.backend.backend() != "tensorflow":
            raise ConfigError(f"Keras runs on {keras.backend.backend()!r} here; the TensorFlow "
                              "plugin serves Keras models on TensorFlow (KERAS_BACKEND="
                              "tensorflow)")
        configure_devices()
        self.model_dir = model_dir
        self.model = keras.saving.load_model(os.path.join(model_dir, file_name), compile=False)
        self._inputs = _structure(self.model, "input")
        self._outputs = _structure(self.model, "output")
        self.input_specs = {t.name: tf.TensorSpec(_shape(t), tf.as_dtype(t.dtype))
                            for t in tf.nest.flatten(self._inputs)}
        self.output_names = _output_names(self._outputs)
        self._function = tf.function(self._call, input_signature=[self.input_specs])
        self._function.get_concrete_function()  # traced now, not on the first request
        self._metadata = ModelMetadata(
            platform="tensorflow",
            signatures={SIGNATURE: Signature(
                inputs=tuple(_spec(name, spec.dtype, spec.shape)
                             for name, spec in self.input_specs.items()),
                outputs=tuple(_spec(name, tf.as_dtype(tensor.dtype), _shape(tensor))
                              for name, tensor in zip(self.output_names,
                                                      tf.nest.flatten(self._outputs))))},
            default_signature=SIGNATURE,
            properties={"keras_file": file_name, "keras_version": keras.__version__,
                        "tensorflow_version": tf.__version__},
        )

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> KerasPredictor:
        """Load the one Keras file in *model_dir*; SavedModel options are refused."""
        if options:
            raise TypeError(f"option(s) {sorted(options)} are for SavedModels, not for a "
                            "Keras file")
        file_name = keras_file(model_dir)
        if file_name is None:
            raise FileNotFoundError(f"no Keras file (*.keras, *.h5) in {model_dir}")
        return cls(model_dir, file_name)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def _call(self, inputs: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """The model on named input tensors: named output tensors (traced once)."""
        arranged = tf.nest.map_structure(lambda t: inputs[t.name], self._inputs)
        result = self.model(arranged, training=False)
        return dict(zip(self.output_names, _flat_outputs(result, self._outputs)))

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        if signature not in (None, SIGNATURE):
            raise InvalidInput(f'Serving signature name: "{signature}" not found in '
                               "signature def")
        missing = sorted(set(self.input_specs) - set(inputs))
        unknown = sorted(set(inputs) - set(self.input_specs))
        if missing or unknown:
            raise InvalidInput(f"the model takes inputs {list(self.input_specs)}; missing "
                               f"{missing}, unknown {unknown}")
        wanted = list(outputs) if outputs is not None else self.output_names
        absent = [name for name in wanted if name not in self.output_names]
        if absent:
            raise InvalidInput(f"unknown output(s) {absent}; the model has {self.output_names}")
        feeds = {name: _fit(name, spec, np.asarray(inputs[name]))
                 for name, spec in self.input_specs.items()}
        try:
            with native_call():  # a Keras call cannot be cut short: it ends first
                result = self._function(feeds)
        except OP_ERRORS_400 as exc:
            raise InvalidInput(first_line(exc.message))
        return {name: np.asarray(result[name]) for name in wanted}

    def classify(self, examples: Sequence[Example],
                 signature: str | None = None) -> Classification:
        raise InvalidInput(f"No classification inputs found in SignatureDef: {self._no_examples}")

    def regress(self, examples: Sequence[Example], signature: str | None = None) -> Tensor:
        raise InvalidInput(f"No regression inputs found in SignatureDef: {self._no_examples}")

    @property
    def _no_examples(self) -> str:
        """Why :meth:`classify` and :meth:`regress` refuse, after TF Serving's own message."""
        return (f"a Keras model takes its inputs by name ({list(self.input_specs)}), not "
                "serialized tf.Example protos")

    def warmup_requests(self, model_dir: str) -> list[InferenceRequest]:
        """TF Serving's ``assets.extra/tf_serving_warmup_requests``, beside the Keras file."""
        return read_warmup_requests(model_dir)

    def close(self) -> None:
        """Drop the model and its traced function (no Keras-wide state is touched: other
        versions in this worker keep theirs)."""
        del self._function, self.model


def _structure(model: Any, kind: str) -> Any:
    """The model's inputs or outputs (*kind* ``input``/``output``) as it nests them: a
    functional model's dict, list or tensor; a Sequential model's one tensor."""
    try:
        return getattr(model, kind)
    except (AttributeError, ValueError):  # a Sequential model never called
        pass
    flat = list(getattr(model, kind + "s", None) or ())
    if not flat:
        raise ConfigError(f"the Keras model declares no {kind}s (a subclassed model?): "
                          "export it with model.export() and serve the SavedModel")
    return flat[0] if len(flat) == 1 else flat


def _keyed(outputs: Any) -> bool:
    """Whether the model returns a flat dict: its outputs are named by key."""
    return isinstance(outputs, dict) and not any(isinstance(v, (dict, list, tuple))
                                                 for v in outputs.values())


def _output_names(outputs: Any) -> list[str]:
    """Dict outputs by key (sorted, Keras's order), any other by position."""
    if _keyed(outputs):
        return [str(key) for key in sorted(outputs)]
    return [f"output_{i}" for i in range(len(tf.nest.flatten(outputs)))]


def _flat_outputs(result: Any, outputs: Any) -> list[Any]:
    """The model's result in :func:`_output_names`'s order."""
    if _keyed(outputs):
        return [result[key] for key in sorted(outputs)]
    return list(tf.nest.flatten(result))


def _shape(tensor: Any) -> tuple[int | None, ...]:
    return tuple(None if d is None else int(d) for d in tensor.shape)


def _spec(name: str, dtype: tf.DType, shape: Any) -> TensorSpec:
    dims = tuple(-1 if d is None else int(d) for d in shape)
    return TensorSpec(name, datatype(dtype.as_datatype_enum), dims)


def _fit(name: str, spec: tf.TensorSpec, value: Tensor) -> Tensor:
    """*value* in input *name*'s dtype, refused (400) unless its shape fits the model's."""
    declared = spec.shape.as_list()
    if value.ndim != len(declared) or any(d is not None and d != n
                                          for d, n in zip(declared, value.shape)):
        raise InvalidInput(f"input {name!r}: shape {list(value.shape)} does not fit the "
                           f"model's {[-1 if d is None else d for d in declared]}")
    return fit_value(name, spec.dtype, value)
