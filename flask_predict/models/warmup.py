"""Warm-up: replay sample requests on a freshly loaded version before it is served.

The first request on a new version often pays for lazy work (TensorFlow traces its graph,
allocators grow, caches fill). Replaying samples while the old version still serves moves
that cost off the first real request. Two sources, both optional, both in the version
folder:

* ``assets.extra/warmup_requests.json``, for any predictor: a JSON list of request
  bodies (or ``{"requests": [...]}``). A body with ``"instances"`` goes through the
  instances door, ``predict(instances, **other_keys)``, as an AI Platform request does. A
  body with ``"inputs"`` (an object of input name -> nested list, TF Serving's columnar
  format; optional ``"signature_name"`` and ``"output_filter"``) goes through the tensor door.
* whatever the predictor's :meth:`~flask_predict.Predictor.warmup_requests` returns: the
  TensorFlow plugin reads TF Serving's ``assets.extra/tf_serving_warmup_requests``.

As in TF Serving, at most :data:`MAX_REQUESTS` requests are replayed, and a request that
fails makes the version fail to load: a broken warm-up is a broken version.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from .. import codecs
from ..errors import ConfigError, InvalidInput, PredictError
from ..predictor import Predictor
from ..types import InferenceRequest

logger = logging.getLogger(__name__)

WARMUP_FILE = os.path.join("assets.extra", "warmup_requests.json")
"""The JSON warm-up file, relative to the version folder."""

MAX_REQUESTS = 1000
"""TF Serving's limit on warm-up records per version."""


@dataclass(frozen=True)
class InstancesRequest:
    """A warm-up request for the instances door."""

    instances: list[Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JsonTensorRequest:
    """A warm-up request for the tensor door whose inputs are still JSON: they are decoded
    with the datatypes of the loaded version's signature when replayed."""

    inputs: Mapping[str, Any]
    signature: str | None = None
    outputs: list[str] | None = None


WarmupRequest = Union[InstancesRequest, JsonTensorRequest, InferenceRequest]


def warm_up(predictor: Predictor, model_dir: str) -> int:
    """Replay every warm-up request of the version in *model_dir*, freshly loaded as
    *predictor*; return how many ran.

    :raises ConfigError: a warm-up file is malformed or a request failed.
    """
    requests = read_json_requests(os.path.join(model_dir, WARMUP_FILE))
    hook = getattr(predictor, "warmup_requests", None)
    if callable(hook):
        requests.extend(hook(model_dir))
    if len(requests) > MAX_REQUESTS:
        raise ConfigError(f"{len(requests)} warm-up requests; at most {MAX_REQUESTS} allowed")
    for index, request in enumerate(requests):
        try:
            replay(predictor, request)
        except Exception as exc:
            reason = exc.message if isinstance(exc, PredictError) else \
                f"{type(exc).__name__}: {exc}"
            raise ConfigError(f"warm-up request {index} failed: {reason}") from exc
    return len(requests)


def replay(predictor: Predictor, request: WarmupRequest) -> None:
    """Run one warm-up request and discard its answer."""
    if isinstance(request, InstancesRequest):
        predictor.predict(request.instances, **request.kwargs)
    elif isinstance(request, JsonTensorRequest):
        signature = predictor.signature(request.signature)
        inputs = {}
        for name, values in request.inputs.items():
            spec = signature.input(name)
            if spec is None:
                raise InvalidInput(f"unknown input {name!r}; the model's inputs are "
                                   f"{[s.name for s in signature.inputs]}")
            inputs[name] = codecs.to_array(values, spec.datatype, name)
        predictor.predict_tensors(inputs, request.outputs, request.signature)
    else:
        predictor.predict_tensors(request.inputs, request.outputs, request.signature)


def read_json_requests(path: str) -> list[WarmupRequest]:
    """The requests in the JSON warm-up file at *path*; none when it does not exist."""
    try:
        with open(path, "rb") as file:
            text = file.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read {WARMUP_FILE}: {exc.strerror}")
    try:
        document = codecs.loads(text)
    except Exception as exc:
        raise ConfigError(f"{WARMUP_FILE} is not valid JSON: {exc}")
    if isinstance(document, dict) and "requests" in document:
        document = document["requests"]
    if not isinstance(document, list):
        raise ConfigError(f"{WARMUP_FILE} must hold a list of request bodies")
    return [decode_json_request(body, index) for index, body in enumerate(document)]


def decode_json_request(body: Any, index: int) -> WarmupRequest:
    """One body of the JSON warm-up file as a request (inputs stay JSON until replayed)."""
    where = f"{WARMUP_FILE}, request {index}"
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: must be a JSON object")
    if "instances" in body:
        if not isinstance(body["instances"], list) or not body["instances"]:
            raise ConfigError(f"{where}: 'instances' must be a non-empty list")
        return InstancesRequest(body["instances"],
                                {k: v for k, v in body.items() if k != "instances"})
    if "inputs" in body:
        inputs = body["inputs"]
        if not isinstance(inputs, dict) or not inputs:
            raise ConfigError(f"{where}: 'inputs' must map input names to values")
        outputs = body.get("output_filter")
        if outputs is not None and (not isinstance(outputs, list)
                                    or not all(isinstance(o, str) for o in outputs)):
            raise ConfigError(f"{where}: 'output_filter' must be a list of output names")
        signature = body.get("signature_name")
        if signature is not None and not isinstance(signature, str):
            raise ConfigError(f"{where}: 'signature_name' must be a string")
        return JsonTensorRequest(inputs, signature, outputs)
    raise ConfigError(f"{where}: needs 'instances' or 'inputs'")
