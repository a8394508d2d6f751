"""Requested outputs by the names V2 clients send, answered under those names.

A requested name is the model's own output, or KServe's: KServe's model servers name their
outputs ``output-0``, ``output-1``... in order (its scikit-learn, XGBoost and LightGBM
servers answer one, ``output-0``), so a client migrating from KServe that asks for
``output-<i>`` gets the model's i-th output, named as it asked. A model output really
called ``output-<i>`` wins. Any other name is Triton's ``unexpected inference output 'x'
for model 'm'`` (400). No Flask here: the REST route and the gRPC servicer share it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from ...errors import InvalidInput
from ...types import InferenceRequest, InferenceResponse, Signature

KSERVE_NAME = re.compile(r"output-(0|[1-9][0-9]{0,3})")
"""KServe's name of a model's i-th output."""


def resolve(request: InferenceRequest, signature: Signature, model: str
            ) -> tuple[InferenceRequest, dict[str, str] | None]:
    """*request* asking for the model's own output names, and which own output each asked
    name is (``None``: every output, under the model's names)."""
    if request.outputs is None:
        return request, None
    own = [spec.name for spec in signature.outputs]
    asked: dict[str, str] = {}
    for name in request.outputs:
        if name in own:
            asked[name] = name
            continue
        match = KSERVE_NAME.fullmatch(name)
        if match is None or int(match[1]) >= len(own):
            raise InvalidInput(f"unexpected inference output '{name}' for model '{model}'")
        asked[name] = own[int(match[1])]
    if all(name == target for name, target in asked.items()):
        return request, None
    return replace(request, outputs=list(dict.fromkeys(asked.values()))), asked


def answering(response: InferenceResponse, asked: dict[str, str] | None
              ) -> InferenceResponse:
    """*response* with its outputs under the names the client asked for, in its order."""
    if asked is None:
        return response
    return replace(response, outputs={name: response.outputs[target]
                                      for name, target in asked.items()})
