"""``projects.explain`` (AI Platform) and ``endpoints.explain`` (Vertex AI): the request
bodies and Google's ``ExplainResponse``. No Flask here.

Both take the body their ``:predict`` takes (AI Platform: ``instances`` and any other key
as a keyword; Vertex AI: ``instances`` and ``parameters``, plus ``deployedModelId``, which
must name the model the endpoint serves). Vertex AI's ``explanationSpecOverride`` is
refused: the attributions here are exact, with no sampling or steps to override. Both
answer ``{"explanations": [...]}``, one ``Explanation`` per instance
(:func:`codecs.explanation_rows`); Vertex AI adds ``predictions`` (what ``:predict``
answers) and ``deployedModelId``.
"""

from __future__ import annotations

from typing import Any

from ... import codecs
from ...request import limits
from ...core.state import PredictState
from ...errors import InvalidInput
from ...models.served import LoadedVersion
from ...request.body import parse_json
from .instances import Decoder, decode_predict

VERTEX_ONLY = ("deployedModelId", "explanationSpecOverride")
"""``ExplainRequest``'s fields beyond ``PredictRequest``'s."""


def run_explain(state: PredictState, body: bytes, loaded: LoadedVersion,
                decode: Decoder = decode_predict, vertex: bool = False) -> dict[str, Any]:
    """Decode an explain body with *decode* and explain it on *loaded* (held by the caller);
    *vertex*: Vertex AI's request fields and answer."""
    bounds = state.settings.limits
    document = parse_json(body, bounds)
    if vertex and isinstance(document, dict):
        document = vertex_fields(document, loaded.name)
    instances, kwargs = decode(document)
    limits.check_instances(bounds, len(instances))
    predictions, explanation = state.service.explain_instances(loaded, instances, kwargs,
                                                               with_predictions=vertex)
    answer: dict[str, Any] = {"explanations": codecs.explanation_rows(explanation)}
    if vertex:
        answer.update(deployedModelId=loaded.name, predictions=predictions)
    return answer


def vertex_fields(document: dict[str, Any], model: str) -> dict[str, Any]:
    """The ``PredictRequest`` inside Vertex AI's ``ExplainRequest`` *document*, its own
    fields checked against the endpoint's *model*."""
    if "explanationSpecOverride" in document:
        raise InvalidInput("explanationSpecOverride is not supported: the attributions are "
                           "exact (the model's own SHAP values or a linear model's "
                           "coefficients), with nothing to override")
    deployed = document.get("deployedModelId")
    if deployed not in (None, "", model):
        raise InvalidInput(f"deployedModelId {codecs.preview(deployed)} is not deployed on "
                           f"this endpoint, which serves {model!r}")
    return {key: value for key, value in document.items() if key not in VERTEX_ONLY}

