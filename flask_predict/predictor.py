"""The predictor contract: the whole interface a plugin implements."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

import numpy as np

from . import codecs
from .errors import FailedPrecondition, InvalidInput
from .explanation import Explanation, cannot_explain
from .types import (DEFAULT_SIGNATURE, Classification, Example, InferenceRequest, ModelMetadata,
                    Signature, Tensor, TensorSpec)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from .models.mlmodel import MLflowModel


class Predictor(abc.ABC):
    """One loaded model version inside one worker; found via ``flask_predict.predictors``.

    Two doors into the same model. A plugin overrides at least one; the base class derives
    the other through the codecs, so every protocol works with every predictor:

    * the **instances door**, :meth:`predict`, is AI Platform's custom prediction routine:
      JSON instances in, JSON-able predictions out;
    * the **tensor door**, :meth:`predict_tensors` with :meth:`metadata`, takes and returns
      named numpy arrays: what TF Serving, the V2 protocol and grps decode to.

    Predictors never see Flask or a protocol.
    """

    instance_outputs: ClassVar[Sequence[str] | None] = None
    """Outputs the instances door returns (``None``: all); scikit-learn's is ``predict``; an
    MLflow model saved with ``pyfunc_predict_fn`` sets its own on the instance."""

    scores_output: ClassVar[str] = "predict_proba"
    """The output the default :meth:`classify` reads class scores from."""

    values_output: ClassVar[str] = "predict"
    """The output the default :meth:`regress` reads values from."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "__abstractmethods__", None) and (
                cls.predict is Predictor.predict
                and cls.predict_tensors is Predictor.predict_tensors):
            raise TypeError(f"{cls.__name__} must override predict or predict_tensors")

    @classmethod
    @abc.abstractmethod
    def from_path(cls, model_dir: str, **options: Any) -> Predictor:
        """Load the artifact in *model_dir*. Called once per version per worker.

        *options* are the model's extra settings from the model config; an unknown option
        should raise ``TypeError`` so the server stops at boot with its name.
        """

    @classmethod
    def from_mlflow(cls, model: MLflowModel, **options: Any) -> Predictor:
        """Load the MLflow model folder *model* describes from the files of a flavor the
        plugin's manifest lists (``mlflow_flavors``), with no ``mlflow`` imported. The
        default, for a plugin a model's settings name, is :meth:`from_path` on the folder."""
        return cls.from_path(model.folder, **options)

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        """AI Platform's custom-routine door: JSON instances in, JSON-able predictions out.

        Extra top-level request keys arrive as ``kwargs`` (``signature_name`` picks a
        signature). The default decodes *instances* into tensors and calls
        :meth:`predict_tensors`.
        """
        signature_name = kwargs.get("signature_name")
        signature = self.signature(signature_name)
        inputs = codecs.rows_to_tensors(instances, signature)
        outputs = self.predict_tensors(inputs, self.instance_outputs, signature_name)
        return codecs.tensors_to_rows(outputs)

    def predict_request(self, body: Any) -> Any:
        """The whole-request door of a model whose metadata says ``request_door``: the
        parsed JSON body of a Vertex AI or AI Platform predict request in, the JSON-able
        answer out, as Vertex AI's custom prediction routines take them. The default
        refuses (400): the other predictors answer through :meth:`predict`.
        """
        raise FailedPrecondition("the model does not take whole request bodies")

    def predict_matrix(self, matrix: Tensor) -> list[Any] | None:
        """``predict(instances)`` for instances that arrived as a matrix of JSON numbers,
        already parsed to float64 (:func:`codecs.number_matrix`): same answer, no Python
        object per number.

        ``None`` when the instances must go through :meth:`predict` as JSON values: for a
        subclass that overrides :meth:`predict`, or a default signature without exactly
        one floating-point input.
        """
        if type(self).predict is not Predictor.predict:
            return None
        inputs = codecs.matrix_to_tensors(matrix, self.signature())
        if inputs is None:
            return None
        return codecs.tensors_to_rows(self.predict_tensors(inputs, self.instance_outputs))

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        """The tensor door: named numpy arrays in, named arrays out.

        *outputs* limits the outputs computed (``None``: all). The default turns the inputs
        into instances (one input: its rows; several: one object per row), calls
        :meth:`predict` and returns the predictions as the signature's output (``predictions``
        unless declared otherwise); with several outputs declared, each prediction is an
        object naming them.
        """
        predictions = self.predict(codecs.tensors_to_instances(inputs))
        return codecs.predictions_to_outputs(predictions, self.signature(signature).outputs)

    def metadata(self) -> ModelMetadata:
        """Inputs and outputs (name, datatype, shape) per signature, and the platform.

        The default describes the instances door: one input ``instances`` and one output
        ``predictions`` of any type and shape.
        """
        return ModelMetadata(platform="custom", signatures={DEFAULT_SIGNATURE: Signature(
            inputs=(TensorSpec("instances", "BYTES", None),),
            outputs=(TensorSpec("predictions", "BYTES", None),))},
            instances_door=type(self).predict_tensors is Predictor.predict_tensors)

    def classify(self, examples: Sequence[Example],
                 signature: str | None = None) -> Classification:
        """Class labels and scores for each example (TF Serving's ``:classify``).

        The default turns the examples into feature rows (:func:`codecs.examples_to_rows`
        with the ``feature_names`` property), or for a tabular signature into its columns
        (one feature per column, :func:`codecs.examples_to_columns`), calls :meth:`predict_tensors` for
        :attr:`scores_output` and labels the columns with the ``classes`` property.
        """
        meta = self._example_signature(signature)
        if meta.signature.output(self.scores_output) is None:
            raise FailedPrecondition("Expected classification signature outputs to contain "
                                     f"at least one of \"classes\" or \"scores\": the model "
                                     f"has no {self.scores_output!r} output")
        inputs = _example_inputs(meta, examples)
        scores = self.predict_tensors(inputs, [self.scores_output], signature)[
            self.scores_output]
        classes = meta.properties.get("classes")
        labels = None
        if classes is not None:
            labels = np.broadcast_to(np.asarray([str(c) for c in classes], dtype=object),
                                     scores.shape)
        return Classification(classes=labels, scores=scores)

    def regress(self, examples: Sequence[Example], signature: str | None = None) -> Tensor:
        """One number per example (TF Serving's ``:regress``).

        The default turns the examples into feature rows as :meth:`classify` does and returns
        :attr:`values_output`; a model with a ``classes`` property is refused (400).
        """
        meta = self._example_signature(signature)
        if "classes" in meta.properties or meta.signature.output(self.values_output) is None:
            raise FailedPrecondition("No regression outputs found: the model is a "
                                     "classifier or has no regression output")
        inputs = _example_inputs(meta, examples)
        values = self.predict_tensors(inputs, [self.values_output], signature)[
            self.values_output]
        return np.asarray(values)

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """Exact attributions of the model's raw output to each feature, with the baseline
        they start from (the ``explain`` verb, see :mod:`flask_predict.explanation`): the
        baseline plus the attributions of a row is the model's output for it. The default
        refuses (400), naming what can explain.
        """
        raise cannot_explain(f"this {self.metadata().platform} model")

    def explain_instances(self, instances: list[Any], **kwargs: Any) -> Explanation:
        """:meth:`explain` for JSON instances (AI Platform and Vertex AI): the default
        decodes them as :meth:`predict` does and calls :meth:`explain`."""
        if type(self).explain is Predictor.explain:
            return self.explain({})  # refused before any decoding
        signature_name = kwargs.get("signature_name")
        inputs = codecs.rows_to_tensors(instances, self.signature(signature_name))
        return self.explain(inputs, signature_name)

    def _example_signature(self, signature: str | None) -> ModelMetadata:
        meta = self.metadata()
        if signature and signature not in meta.signatures:
            raise InvalidInput(f"No signature was found with the name: {signature}")
        if len(meta.signature.inputs) != 1 and not meta.signature.tabular:
            raise FailedPrecondition("examples need a model with a single input")
        return meta

    def signature(self, name: str | None = None) -> Signature:
        """The signature called *name* (the default one for ``None``)."""
        meta = self.metadata()
        try:
            return meta.signatures[name or meta.default_signature]
        except KeyError:
            raise InvalidInput(f"signature {name!r} not found; the model has "
                               f"{sorted(meta.signatures)}")

    def warmup_requests(self, model_dir: str) -> list[InferenceRequest]:
        """Sample requests in the framework's own warm-up format, replayed through
        :meth:`predict_tensors` before this version is served (TensorFlow reads TF
        Serving's ``assets.extra/tf_serving_warmup_requests``). Default: none; the JSON
        file ``assets.extra/warmup_requests.json`` works for every predictor without this.
        """
        return []

    def after_fork(self) -> None:
        """Called in each gunicorn worker that inherited this predictor, loaded once in the
        master before the fork (a plugin whose manifest says ``shared``), before it serves
        there: set what is per process, such as thread counts, which the master kept at one
        while it loaded. Default: nothing."""

    def close(self) -> None:
        """Release framework resources when the version is unloaded. Default: nothing."""


def _example_inputs(meta: ModelMetadata, examples: Sequence[Example]) -> dict[str, Tensor]:
    """The inputs of the default signature from tf.Examples: its columns, or its one
    input's rows."""
    signature = meta.signature
    if signature.tabular:
        return codecs.examples_to_columns(examples, [spec.name for spec in signature.inputs])
    rows = codecs.examples_to_rows(examples, meta.properties.get("feature_names"))
    return {signature.inputs[0].name: rows}
