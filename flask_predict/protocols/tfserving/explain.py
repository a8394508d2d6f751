"""KServe's V1 ``:explain`` verb on TF Serving's paths (``POST /v1/models/<m>:explain``).

KServe's V1 protocol is TF Serving's REST API plus this verb. Its body is a predict body
(``instances`` or ``inputs``, an optional ``signature_name``, decoded and limited exactly
as ``:predict`` decodes them); the answer is KServe's ``{"predictions": [...],
"explanations": [...]}``: the predictions as ``:predict`` answers a row request, whatever
the request's format, and one explanation per row in Google's ``Explanation`` shape
(:func:`codecs.explanation_rows`). No Flask here.
"""

from __future__ import annotations

from typing import Any

from . import wire
from ... import codecs
from ...request import limits
from ...core.state import PredictState
from ...errors import InvalidInput
from ...models.served import LoadedVersion
from ...types import InferenceRequest


def explain_answer(state: PredictState, loaded: LoadedVersion, body: dict[str, Any]
                   ) -> dict[str, Any]:
    """The ``:explain`` answer for a checked predict *body* on *loaded* (held)."""
    bounds = state.settings.limits
    if loaded.metadata.instances_door:
        key = wire.data_key(body)
        instances = body[key]
        if not isinstance(instances, list) or not instances:
            raise InvalidInput(f"JSON Value: {wire.short(instances)} Expecting '{key}' to be "
                               "a non-empty list/array")
        limits.check_instances(bounds, len(instances))
        kwargs = {k: v for k, v in body.items() if k != key}
        predictions, explanation = state.service.explain_instances(loaded, instances, kwargs,
                                                                   with_predictions=True)
    else:
        name = wire.signature_name(body) or loaded.metadata.default_signature
        signature = loaded.metadata.signatures.get(name)
        if signature is None:
            raise InvalidInput(f'Serving signature name: "{name}" not found in signature def')
        instances = body.get("instances")
        if isinstance(instances, list):
            limits.check_instances(bounds, len(instances))
        inputs, row_format = wire.decode_predict(body, signature, name)
        limits.check_tensors(bounds, inputs.items(), row_format)
        outputs, explanation = state.service.explain(loaded, InferenceRequest(
            model=loaded.name, inputs=inputs, version=str(loaded.version), signature=name),
            with_predictions=True)
        predictions = codecs.tensors_to_rows(outputs)
    return {"predictions": predictions, "explanations": codecs.explanation_rows(explanation)}
