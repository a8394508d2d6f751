"""TF Serving's gRPC API: ``tensorflow.serving.PredictionService`` and ``ModelService``.

https://github.com/tensorflow/serving/blob/master/tensorflow_serving/apis/prediction_service.proto

Requests decode into the same internal request the REST routes build, run through the same
service calls and encode back; answers and error codes are TF Serving's (its canonical error
codes are gRPC's), and so are the messages clients match on: ``Missing ModelSpec``,
``Servable not found for request: Latest(<name>)``, ``Serving signature key "<sig>" not
found.``, ``input size does not match signature ...``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from google.protobuf import json_format

from . import lookup, tensor_proto, wire
from ... import codecs
from ...request import limits
from ...core.service import ModelService
from ...errors import FailedPrecondition, InvalidInput
from ...grpc.messages import tfs
from ...models.served import LoadedVersion
from ...types import Example, InferenceRequest, Signature, Tensor, TensorSpec

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ...core.state import PredictState

CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"


class PredictionServicer:
    """``Predict``, ``Classify``, ``Regress``, ``MultiInference``, ``GetModelMetadata``."""

    def __init__(self, state: PredictState) -> None:
        self.service = state.service
        self.limits = state.settings.limits

    def _serving(self, spec: Any) -> LoadedVersion:
        """Hold the loaded version a ``ModelSpec`` names (a number or a label)."""
        version = spec.version.value if spec.HasField("version") else None
        label = spec.version_label if spec.WhichOneof("version_choice") == "version_label" \
            else None
        return lookup.serving(self.service, spec.name, version, label)

    def Predict(self, request: Any) -> Any:
        with self._serving(_model_spec(request)) as loaded:
            name = request.model_spec.signature_name or loaded.metadata.default_signature
            signature = loaded.metadata.signatures.get(name)
            if signature is None:
                raise FailedPrecondition(f'Serving signature key "{name}" not found.')
            inputs = decode_inputs(request.inputs, signature)
            limits.check_tensors(self.limits, inputs.items())  # the REST route's (413 there)
            outputs = check_output_filter(request.output_filter, signature)
            result = self.service.predict(loaded, InferenceRequest(
                model=loaded.name, inputs=inputs, version=str(loaded.version), signature=name,
                outputs=outputs))
            response = tfs.PredictResponse()
            _set_spec(response.model_spec, loaded, name)
        for alias, array in result.outputs.items():
            tensor_proto.to_tensor_proto(np.asarray(array), response.outputs[alias])
        return response

    def Classify(self, request: Any) -> Any:
        return self._examples(request, tfs.ClassificationResponse(), _classify)

    def Regress(self, request: Any) -> Any:
        return self._examples(request, tfs.RegressionResponse(), _regress)

    def _examples(self, request: Any, response: Any,
                  run: Callable[[ModelService, LoadedVersion, list[Example], str, Any], None]
                  ) -> Any:
        """Classify or regress the request's examples into *response*."""
        with self._serving(_model_spec(request)) as loaded:
            examples = tensor_proto.from_input(request.input)
            signature = request.model_spec.signature_name
            _set_spec(response.model_spec, loaded, signature)
            run(self.service, loaded, examples, signature, response.result)
        return response

    def MultiInference(self, request: Any) -> Any:
        """Several classify/regress signatures of one model version over one input."""
        tasks = list(request.tasks)
        if not tasks:
            raise InvalidInput("MultiInferenceRequest must have at least one task")
        for task in tasks:
            if task.model_spec.name != tasks[0].model_spec.name:
                raise InvalidInput("All ModelSpecs in a MultiInferenceRequest must access "
                                   "the same model name.")
            if task.method_name not in (CLASSIFY, REGRESS):
                raise InvalidInput(f"Unsupported signature method_name: {task.method_name}")
        signatures = [task.model_spec.signature_name for task in tasks]
        for index, name in enumerate(signatures):
            if name in signatures[:index]:
                raise InvalidInput(f"Duplicate evaluation of signature: {name}")
        with self._serving(tasks[0].model_spec) as loaded:
            examples = tensor_proto.from_input(request.input)
            response = tfs.MultiInferenceResponse()
            for task in tasks:
                result = response.results.add()
                signature = task.model_spec.signature_name
                _set_spec(result.model_spec, loaded, signature)
                if task.method_name == CLASSIFY:
                    _classify(self.service, loaded, examples, signature,
                              result.classification_result)
                else:
                    _regress(self.service, loaded, examples, signature, result.regression_result)
        return response

    def GetModelMetadata(self, request: Any) -> Any:
        spec = _model_spec(request)
        if not request.metadata_field:
            raise InvalidInput("GetModelMetadataRequest must specify at least one "
                               "metadata_field")
        for field in request.metadata_field:
            if field != "signature_def":
                raise InvalidInput(f"Metadata field {field} is not supported")
        with self._serving(spec) as loaded:
            body = wire.encode_metadata(loaded)
            response = tfs.GetModelMetadataResponse()
            _set_spec(response.model_spec, loaded, "")
        signature_defs = json_format.ParseDict(body["metadata"]["signature_def"],
                                               tfs.SignatureDefMap(), ignore_unknown_fields=True)
        response.metadata["signature_def"].Pack(signature_defs)
        return response


class ModelServicer:
    """``GetModelStatus``: every version's state, as ``GET /v1/models/<name>`` shows it."""

    def __init__(self, state: PredictState) -> None:
        self.service = state.service
        self.limits = state.settings.limits

    def GetModelStatus(self, request: Any) -> Any:
        spec = _model_spec(request)
        served = lookup.served_model(self.service, spec.name)
        version = spec.version.value if spec.HasField("version") else None
        return json_format.ParseDict(wire.encode_status(served, version),
                                     tfs.GetModelStatusResponse())


# --- helpers ----------------------------------------------------------------------------------

def _model_spec(request: Any) -> Any:
    if not request.HasField("model_spec"):
        raise InvalidInput("Missing ModelSpec")
    return request.model_spec


def _set_spec(spec: Any, loaded: LoadedVersion, signature: str) -> None:
    spec.name = loaded.name
    spec.version.value = loaded.version
    spec.signature_name = signature


def decode_inputs(protos: Any, signature: Signature) -> dict[str, Tensor]:
    """The request's tensors, which must be exactly the signature's inputs (TF Serving's
    checks and messages); numbers are cast to the signature's type when no kind is lost.
    A table's (``Signature.tabular``) rows may also come as one tensor of any other name,
    ``[N, columns]``, which the model splits by position."""
    expected = {spec.name: spec for spec in signature.inputs}
    sent = sorted(protos.keys())
    if signature.tabular and len(sent) == 1 and len(expected) > 1 and sent[0] not in expected:
        (alias,) = sent
        return {alias: tensor_proto.from_tensor_proto(protos[alias], alias)}
    if len(sent) != len(expected):
        extra = sorted(set(sent) - set(expected))
        missing = sorted(set(expected) - set(sent))
        raise InvalidInput(
            f"input size does not match signature: {len(sent)}!={len(expected)} "
            f"len({{{','.join(sent)}}}) != len({{{','.join(sorted(expected))}}}). Sent extra: "
            f"{{{','.join(extra)}}}. Missing but required: {{{','.join(missing)}}}.")
    inputs: dict[str, Tensor] = {}
    for alias in sent:
        spec = expected.get(alias)
        if spec is None:
            raise InvalidInput(f"input tensor alias not found in signature: {alias}. Inputs "
                               f"expected to be in the set {{{','.join(sorted(expected))}}}.")
        inputs[alias] = _fit(tensor_proto.from_tensor_proto(protos[alias], alias), spec, alias)
    return inputs


def _fit(array: Tensor, spec: TensorSpec, alias: str) -> Tensor:
    target = codecs.V2_TO_NUMPY.get(spec.datatype)
    if target is None or target.kind == "O" or array.dtype == target:
        return array  # BYTES in a signature: the model takes any type (custom predictors)
    if array.dtype.kind == "O" or not np.can_cast(array.dtype, target, "same_kind"):
        raise InvalidInput(f"input {alias!r}: the signature expects "
                           f"{wire.V2_TO_DT.get(spec.datatype, spec.datatype)}, got "
                           f"{wire.V2_TO_DT.get(codecs.datatype_of(array))}")
    if codecs.past_range(array, target):
        raise InvalidInput(f"input {alias!r}: a value is out of range for "
                           f"{wire.V2_TO_DT.get(spec.datatype, spec.datatype)}")
    return array.astype(target)


def check_output_filter(names: Any, signature: Signature) -> list[str] | None:
    """The requested outputs (``None``: all), each a signature output named once."""
    if not names:
        return None
    known = sorted(spec.name for spec in signature.outputs)
    seen: list[str] = []
    for alias in names:
        if alias not in known:
            raise InvalidInput(f"output tensor alias not found in signature: {alias} Outputs "
                               f"expected to be in the set {{{','.join(known)}}}.")
        if alias in seen:
            raise InvalidInput(f"duplicate output tensor alias: {alias}")
        seen.append(alias)
    return seen


def _classify(service: ModelService, loaded: LoadedVersion, examples: list[Example],
              signature: str, result: Any) -> None:
    classification = service.classify(loaded, examples, signature or None)
    for row in wire.encode_classify(classification, len(examples))["results"]:
        classes = result.classifications.add()
        for label, score in row:
            classes.classes.add(label=_label(label), score=float(score))


def _label(label: Any) -> str:
    if isinstance(label, dict):  # {"b64": ...}: bytes that are not text
        return codecs.b64_decode(label, "label").decode("utf-8", "replace")
    return str(label)


def _regress(service: ModelService, loaded: LoadedVersion, examples: list[Example],
             signature: str, result: Any) -> None:
    values = service.regress(loaded, examples, signature or None)
    for value in wire.encode_regress(values, len(examples))["results"].tolist():
        result.regressions.add(value=value)
