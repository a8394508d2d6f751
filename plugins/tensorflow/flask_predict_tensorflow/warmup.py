"""TF Serving's warm-up file: ``assets.extra/tf_serving_warmup_requests`` in a version folder.

A TFRecord file of ``tensorflow.serving.PredictionLog`` protos (the protos ship in the
``tensorflow-serving-api`` package), as TF Serving's ``saved_model_warmup`` reads it. Each
log becomes tensor requests that :mod:`flask_predict.models.warmup` replays before the version is
served:

* ``predict_log``: the request's input tensors, signature and output filter;
* ``classify_log`` / ``regress_log``: the serialized ``tf.Example``\\ s fed to the
  signature's ``inputs`` (context features merged into each example, as TF Serving does);
* ``multi_inference_log``: one such request per task.

Any other log kind (``session_run_log``) is refused, as TF Serving refuses it.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import input_pb2, prediction_log_pb2

from flask_predict.plugin import ConfigError, InferenceRequest, Tensor

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
"""TF Serving's warm-up file, relative to the version folder."""


def read_warmup_requests(model_dir: str) -> list[InferenceRequest]:
    """The requests in *model_dir*'s TF Serving warm-up file; none when there is no file."""
    path = os.path.join(model_dir, WARMUP_FILE)
    if not os.path.isfile(path):
        return []
    requests: list[InferenceRequest] = []
    try:
        records = [bytes(record) for record in tf.data.TFRecordDataset(path).as_numpy_iterator()]
    except tf.errors.OpError as exc:
        raise ConfigError(f"{WARMUP_FILE} is not a readable TFRecord file: {exc.message}")
    for index, record in enumerate(records):
        log = prediction_log_pb2.PredictionLog()
        try:
            log.ParseFromString(record)
        except Exception as exc:  # protobuf's DecodeError, whose module varies by backend
            raise ConfigError(f"{WARMUP_FILE}, record {index}: not a PredictionLog ({exc})")
        requests.extend(log_requests(log, index))
    return requests


def log_requests(log: prediction_log_pb2.PredictionLog, index: int) -> list[InferenceRequest]:
    """The tensor requests that replay one ``PredictionLog``."""
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        request = log.predict_log.request
        return [InferenceRequest(
            model=request.model_spec.name,
            inputs={alias: tensor_value(proto) for alias, proto in request.inputs.items()},
            outputs=list(request.output_filter) or None,
            signature=request.model_spec.signature_name or None)]
    if kind in ("classify_log", "regress_log"):
        request = getattr(log, kind).request
        return [examples_request(request.model_spec.name, request.model_spec.signature_name,
                                 request.input)]
    if kind == "multi_inference_log":
        request = log.multi_inference_log.request
        return [examples_request(task.model_spec.name, task.model_spec.signature_name,
                                 request.input) for task in request.tasks]
    raise ConfigError(f"{WARMUP_FILE}, record {index}: unsupported log type {kind!r}")


def tensor_value(proto: tf.compat.v1.TensorProto) -> Tensor:
    """A ``TensorProto`` as a numpy array (strings as an object array of bytes)."""
    array: Tensor = np.asarray(tf.make_ndarray(proto))
    return array.astype(object) if array.dtype.kind == "S" else array


def examples_request(model: str, signature: str, examples: input_pb2.Input) -> InferenceRequest:
    """A classify/regress input as the serialized examples fed to the signature's ``inputs``."""
    kind = examples.WhichOneof("kind")
    if kind == "example_list":
        serialized = [e.SerializeToString() for e in examples.example_list.examples]
    elif kind == "example_list_with_context":
        context = examples.example_list_with_context.context
        serialized = []
        for example in examples.example_list_with_context.examples:
            merged = tf.train.Example()
            merged.CopyFrom(context)
            merged.MergeFrom(example)
            serialized.append(merged.SerializeToString())
    else:
        raise ConfigError(f"{WARMUP_FILE}: a classify/regress request without examples")
    values = np.empty(len(serialized), dtype=object)
    values[:] = serialized
    return InferenceRequest(model=model, inputs={"inputs": values},
                            signature=signature or None)
