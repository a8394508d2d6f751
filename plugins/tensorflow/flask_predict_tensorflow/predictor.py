"""TensorFlow predictor: a SavedModel (``saved_model.pb`` + ``variables/``), TF1 or TF2; a
folder holding a Keras file instead is handed to :mod:`.keras_model`.

Every model is loaded the way TF Serving loads it: the ``serve`` MetaGraph into a
``tf.compat.v1.Session``, and each signature run by its TensorInfo tensor names. That path
loads old TF1 exports (``half_plus_three``, ref-typed ``counter``) that ``tf.saved_model.load``
refuses, and native TF2 exports alike. Signatures, dtypes and shapes come from the
``saved_model.pb`` proto itself, so metadata matches TF Serving's.

Shapes are not checked, as in TF Serving: a tensor of shape ``[3]`` fed to an input declared
``[-1, 1]`` runs and gives a ``[3]`` output. Python's ``Session.run`` refuses that, so the
session is run one level lower (``Session._do_run``, the call ``run`` ends in).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Mapping, Sequence

import numpy as np
import tensorflow as tf
from google.protobuf import json_format, message, text_format
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, saved_model_pb2
from tensorflow.python.client import pywrap_tf_session as tf_session
from tensorflow.python.saved_model.loader_impl import SavedModelLoader

from flask_predict.plugin import (Classification, DeadlineExceeded, Example, InferenceRequest,
                                  InvalidInput, ModelMetadata, Predictor, Signature, Tensor,
                                  TensorSpec, UnreadableModel, empty, native_call, one_line)
from flask_predict.plugin import MLflowModel

from .devices import configure_devices
from .examples import serialize_examples
from .manifest import has_saved_model, keras_file, keras_files
from .tensors import OP_ERRORS_400, datatype, first_line, fit_value
from .warmup import read_warmup_requests

logger = logging.getLogger(__name__)

__all__ = ["TensorFlowPredictor", "datatype"]

INIT_OP_SIGNATURE = "__saved_model_init_op"
"""TF2's pseudo-signature: listed in metadata, never callable."""


class TensorFlowPredictor(Predictor):
    """One SavedModel version, loaded into its own graph and session."""

    def __init__(self, model_dir: str, tags: Sequence[str] = ("serve",),
                 signature: str = "serving_default") -> None:
        configure_devices()
        self.model_dir = model_dir
        meta_graph = _read_meta_graph(model_dir, tags)
        self.signature_defs = {name: meta_graph.signature_def[name]
                               for name in sorted(meta_graph.signature_def)}
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph)
        with self.graph.as_default():  # what the deprecated loader.load() calls
            try:
                SavedModelLoader(model_dir).load(self.session, list(tags))
            except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as exc:
                raise UnreadableModel(f"the SavedModel's variables are cut short or corrupt "
                                      f"({type(exc).__name__}: {one_line(exc.message)})"
                                      ) from None
        self._metadata = ModelMetadata(
            platform="tensorflow",
            signatures={name: _signature(sig) for name, sig in self.signature_defs.items()
                        if name != INIT_OP_SIGNATURE},
            default_signature=signature,
            properties={"signature_def": {
                name: json_format.MessageToDict(sig, preserving_proto_field_name=True,
                                                always_print_fields_with_no_presence=True)
                for name, sig in self.signature_defs.items()},
                "tensorflow_version": tf.__version__},
        )

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Predictor:
        """Load the SavedModel in *model_dir* (options ``tags``: its MetaGraph, ``signature``:
        the default signature), or the folder's one Keras file when it holds no SavedModel
        (:class:`~.keras_model.KerasPredictor`, imported only then)."""
        if not has_saved_model(model_dir) and keras_file(model_dir) is not None:
            from .keras_model import KerasPredictor

            return KerasPredictor.from_path(model_dir, **options)
        tags = options.pop("tags", ("serve",))
        signature = options.pop("signature", "serving_default")
        if options:
            raise TypeError(f"unknown TensorFlow option(s) {sorted(options)}")
        ignored = keras_files(model_dir)
        if ignored:
            logger.warning("%s: serving the SavedModel; Keras files beside it are ignored: %s",
                           model_dir, ignored)
        return cls(model_dir, tuple(tags), signature)

    @classmethod
    def from_mlflow(cls, model: MLflowModel, **options: Any) -> Predictor:
        """The ``keras`` flavor (its ``data`` folder's Keras file, or the SavedModel it
        exported) or the ``tensorflow`` one: a Keras model's ``data`` folder, a TF2 module's
        or a TF1 estimator's SavedModel (``saved_model_dir``, with its ``meta_graph_tags``
        and ``signature_def_key``)."""
        if "keras" in model.flavors and model.loader_flavor != "tensorflow":
            return cls.from_path(model.file(model.flavor("keras").get("data")), **options)
        conf = model.flavor("tensorflow")
        if conf.get("model_type") == "keras" or "saved_model_dir" not in conf:
            return cls.from_path(model.file(conf.get("data")), **options)
        if conf.get("meta_graph_tags") and "tags" not in options:
            options["tags"] = tuple(conf["meta_graph_tags"])
        if conf.get("signature_def_key") and "signature" not in options:
            options["signature"] = conf["signature_def_key"]
        return cls.from_path(model.file(conf["saved_model_dir"]), **options)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    # --- predict ---------------------------------------------------------------------------

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        name = signature or self._metadata.default_signature
        sig = self.signature_defs.get(name)
        if sig is None:
            raise InvalidInput(f'Serving signature name: "{name}" not found in signature def')
        if not sig.inputs:
            raise InvalidInput(f"Failed to get input map for signature: {name}")
        missing = [alias for alias in sig.inputs if alias not in inputs]
        unknown = [alias for alias in inputs if alias not in sig.inputs]
        if missing or unknown:
            raise InvalidInput(f"input size does not match signature: {len(inputs)}!="
                               f"{len(sig.inputs)} len({{{','.join(sorted(inputs))}}}) != "
                               f"len({{{','.join(sorted(sig.inputs))}}}). Missing "
                               f"inputs: {','.join(missing)}. Extra inputs: {','.join(unknown)}")
        wanted = list(outputs) if outputs is not None else sorted(sig.outputs)
        feeds = {sig.inputs[alias].name: array for alias, array in inputs.items()}
        fetched = self._run(feeds, [sig.outputs[alias].name for alias in wanted])
        return dict(zip(wanted, fetched))

    # --- classify / regress ----------------------------------------------------------------

    def classify(self, examples: Sequence[Example],
                 signature: str | None = None) -> Classification:
        """TF Serving's classifier: one input ``inputs`` fed serialized ``tf.Example``s,
        outputs ``classes`` and/or ``scores`` of shape ``[N, K]``."""
        name, sig = self._signature_def(signature)
        if len(sig.inputs) != 1 or "inputs" not in sig.inputs:
            raise InvalidInput(f"No classification inputs found in SignatureDef: {_text(sig)}")
        if not {"classes", "scores"} & set(sig.outputs) or len(sig.outputs) > 2:
            raise InvalidInput("Expected classification signature outputs to contain at least "
                               f'one of "classes" or "scores". Signature was: {_text(sig)}')
        aliases = [alias for alias in ("classes", "scores") if alias in sig.outputs]
        fetched = dict(zip(aliases, self._run(
            {sig.inputs["inputs"].name: serialize_examples(examples)},
            [sig.outputs[alias].name for alias in aliases])))
        for alias, array in fetched.items():
            if array.ndim != 2 or array.shape[0] != len(examples):
                raise InvalidInput(f"Expected Tensor shape: [{len(examples)} num_classes] but "
                                   f"got {list(array.shape)} for {alias!r}")
        return Classification(classes=fetched.get("classes"), scores=fetched.get("scores"))

    def regress(self, examples: Sequence[Example], signature: str | None = None) -> Tensor:
        """TF Serving's regressor: one input ``inputs``, one output ``outputs`` of shape
        ``[N]`` or ``[N, 1]``; returns ``[N]`` values."""
        name, sig = self._signature_def(signature)
        if len(sig.inputs) != 1 or "inputs" not in sig.inputs:
            raise InvalidInput(f"No regression inputs found in SignatureDef: {_text(sig)}")
        if len(sig.outputs) != 1 or "outputs" not in sig.outputs:
            raise InvalidInput(f"No regression outputs found in SignatureDef: {_text(sig)}")
        (values,) = self._run({sig.inputs["inputs"].name: serialize_examples(examples)},
                              [sig.outputs["outputs"].name])
        if values.shape not in ((len(examples),), (len(examples), 1)):
            raise InvalidInput("Expected output Tensor shape to be either [batch_size] or "
                               f"[batch_size, 1] but got {list(values.shape)}")
        return values.reshape(len(examples))

    def _signature_def(self, signature: str | None
                           ) -> tuple[str, meta_graph_pb2.SignatureDef]:
        name = signature or self._metadata.default_signature
        sig = self.signature_defs.get(name)
        if sig is None:
            raise InvalidInput(f"No signature was found with the name: {name}")
        return name, sig

    # --- running ---------------------------------------------------------------------------

    def _run(self, feeds: Mapping[str, Tensor], fetches: Sequence[str]) -> list[Tensor]:
        """Run the session, feeding tensors by name, without Python's static shape check."""
        try:
            feed_tensors = {self.graph.get_tensor_by_name(name): np.asarray(value)
                            for name, value in feeds.items()}
            fetch_tensors = [self.graph.get_tensor_by_name(name) for name in fetches]
            with native_call() as seconds:
                results = self._run_session(feed_tensors, fetch_tensors, seconds)
        except tf.errors.DeadlineExceededError:
            raise DeadlineExceeded("the TensorFlow session ran past the model's time limit")
        except OP_ERRORS_400 as exc:
            raise InvalidInput(first_line(exc.message))
        except (TypeError, ValueError) as exc:
            raise InvalidInput(str(exc).splitlines()[0])
        return [np.asarray(r) for r in results]

    def _run_session(self, feed_tensors: Mapping[Any, np.ndarray], fetch_tensors: list[Any],
                     seconds: float | None) -> Any:
        """One session step, cancelled by TensorFlow after *seconds* (``None``: no limit)."""
        options = _run_options(seconds, sum(np.size(v) for v in feed_tensors.values()))
        do_run = getattr(self.session, "_do_run", None)
        if do_run is None:  # pragma: no cover - a TensorFlow without the private call
            return self.session.run(fetch_tensors, feed_tensors, options=options)
        feed = {tensor.ref(): fit_value(tensor.name, tensor.dtype, value)
                for tensor, value in feed_tensors.items()}
        # One level below Session.run, options travel serialized in a TF_Buffer.
        buffer = (None if options is None else
                  tf_session.TF_NewBufferFromString(options.SerializeToString()))
        try:
            return do_run(None, [], fetch_tensors, feed, buffer, None)
        finally:
            if buffer is not None:
                tf_session.TF_DeleteBuffer(buffer)

    def warmup_requests(self, model_dir: str) -> list[InferenceRequest]:
        """TF Serving's ``assets.extra/tf_serving_warmup_requests`` (see :mod:`.warmup`)."""
        return read_warmup_requests(model_dir)

    def close(self) -> None:
        self.session.close()


CALLER_THREAD_VALUES = 4096
"""A step fed at most this many values in all, with no time limit, runs its kernels on the
calling thread (``RunOptions.inter_op_thread_pool = -1``) rather than handing them to
TensorFlow's inter-op pool and waiting to be woken: for a small request (a row or a few)
that hand-off and wake-up cost more than the kernels, and on a busy machine each waits for
the scheduler. Larger steps keep the pool (branches of a graph run in parallel there), and so
does a step with a time limit: TensorFlow checks the limit while it waits for the pool, and
a step on the calling thread would run past it."""
_CALLER_THREAD = config_pb2.RunOptions(inter_op_thread_pool=-1)


def _run_options(seconds: float | None, values: int) -> Any:
    """``RunOptions`` that cancel the step after *seconds* (TF checks between kernels), or
    that run a small step fed *values* values on the calling thread."""
    if seconds is None:
        return _CALLER_THREAD if values <= CALLER_THREAD_VALUES else None
    return config_pb2.RunOptions(timeout_in_ms=max(1, int(seconds * 1000)))


def _read_meta_graph(model_dir: str, tags: Sequence[str]) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraph with exactly *tags* from ``saved_model.pb`` (or ``.pbtxt``)."""
    saved_model = saved_model_pb2.SavedModel()
    binary = os.path.join(model_dir, "saved_model.pb")
    path = binary if os.path.isfile(binary) else os.path.join(model_dir, "saved_model.pbtxt")
    if empty(path):
        raise UnreadableModel("the file is empty")
    try:
        if path == binary:
            with open(binary, "rb") as file:
                saved_model.ParseFromString(file.read())
        else:
            with open(path, encoding="utf-8") as file:
                text_format.Parse(file.read(), saved_model)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as exc:
        raise UnreadableModel(f"not a SavedModel ({type(exc).__name__}: "
                              f"{one_line(str(exc))})") from None
    for meta_graph in saved_model.meta_graphs:
        if set(meta_graph.meta_info_def.tags) == set(tags):
            return meta_graph
    found = [sorted(mg.meta_info_def.tags) for mg in saved_model.meta_graphs]
    raise FileNotFoundError(f"no MetaGraph tagged {sorted(tags)} in {model_dir} "
                            f"(found {found})")


def _signature(sig: meta_graph_pb2.SignatureDef) -> Signature:
    return Signature(inputs=tuple(_spec(alias, info) for alias, info in sorted(sig.inputs.items())),
                     outputs=tuple(_spec(alias, info)
                                   for alias, info in sorted(sig.outputs.items())),
                     method_name=sig.method_name)


def _spec(alias: str, info: meta_graph_pb2.TensorInfo) -> TensorSpec:
    shape: tuple[int, ...] | None = None
    if info.HasField("tensor_shape") and not info.tensor_shape.unknown_rank:
        shape = tuple(int(dim.size) for dim in info.tensor_shape.dim)
    return TensorSpec(alias, datatype(info.dtype), shape, tensor_name=info.name)


def _text(sig: meta_graph_pb2.SignatureDef) -> str:
    return " ".join(str(sig).split())

