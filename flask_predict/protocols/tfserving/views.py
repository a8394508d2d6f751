"""The TF Serving REST routes: status, metadata, predict, classify, regress, and KServe V1's
explain (:mod:`.explain`).

Every route has the ``/versions/<n>`` and ``/labels/<label>`` forms. Errors answer
``{"error": "<message>"}`` with TF Serving's status codes; any other ``(?i)/v1/`` URL or
method is TF Serving's 400 ``Malformed request`` (see :mod:`.routing`), and responses print
numbers as TF Serving does (``codecs.dumps_tfserving``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from flask import Blueprint, Response, request
from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from . import lookup, routing, settings, wire
from ... import codecs
from ...request import limits
from ...core.service import ModelService
from ...core.state import PredictState
from ...errors import InvalidInput
from ...models.served import LoadedVersion
from ...types import Example, InferenceRequest
from ...request.body import number_matrix, parse_json
from ...web.protocol_http import (JSON_MIMETYPE, error_handler, json_error, read_body, read_json,
                                  request_state)
from .explain import explain_answer

bp = Blueprint("predict_tfserving", __name__)


@bp.record_once
def _add_converter(setup: BlueprintSetupState) -> None:
    """Before the rules: the converter that matches ``v1`` in any case."""
    setup.app.url_map.converters.setdefault(routing.CONVERTER, routing.AnyCaseV1)


ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
VERSION_FORMS = ("", "/versions/<version>", "/labels/<label>")


def parse_version(version: str | None) -> int | None:
    """A URL version: digits only (else the URL is malformed), within int64."""
    if version is None:
        return None
    if not (version.isdigit() and version.isascii()):
        raise malformed()
    number = int(version)
    if number > codecs.INT64_MAX:
        raise InvalidInput(f"Failed to convert version: {version} to numeric.")
    return number


def serving(state: PredictState, model: str, version: str | None, label: str | None
            ) -> LoadedVersion:
    """Hold the version a request names, with TF Serving's texts for what is not served."""
    if ":" in model or ":" in (label or ""):  # TF Serving's names are [^/:]+
        raise malformed()
    return lookup.serving(state.service, model, parse_version(version), label)


def malformed() -> InvalidInput:
    return InvalidInput(f"Malformed request: {request.method} {request.full_path.rstrip('?')}")


# --- GET ------------------------------------------------------------------------------------

def model_status(model: str, version: str | None = None,
                 label: str | None = None) -> ResponseReturnValue:
    """Every version's state; a label is ignored, as in TF Serving."""
    if ":" in model or request.method != "GET":  # HEAD: TF Serving's regexes are per method
        raise malformed()
    number = parse_version(version)
    state = request_state()
    served = lookup.served_model(state.service, model)
    return tf_response(state, wire.encode_status(served, number))


def model_metadata(model: str, version: str | None = None,
                   label: str | None = None) -> ResponseReturnValue:
    if request.method != "GET":
        raise malformed()
    state = request_state()
    with serving(state, model, version, label) as loaded:
        return tf_response(state, wire.encode_metadata(loaded))


# --- POST -----------------------------------------------------------------------------------

def predict(model: str, version: str | None = None,
            label: str | None = None) -> ResponseReturnValue:
    """A body that is only ``{"instances": <matrix of numbers>}`` skips the JSON values
    (``number_matrix``) when the signature takes it as it is."""
    state = request_state()
    bounds = state.settings.limits
    raw = read_body(state)
    matrix = number_matrix(raw, "instances", bounds)
    body = {} if matrix is not None else wire.check_body(parse_json(raw, bounds))
    with serving(state, model, version, label) as loaded:
        if loaded.metadata.instances_door:
            body = body or wire.check_body(parse_json(raw, bounds))
            return tf_response(state, predict_instances(state, loaded, body))
        name = wire.signature_name(body) or loaded.metadata.default_signature
        signature = loaded.metadata.signatures.get(name)
        if signature is None:
            raise InvalidInput(f'Serving signature name: "{name}" not found in signature def')
        inputs = codecs.matrix_to_tensors(matrix, signature) if matrix is not None else None
        row_format = True
        if inputs is None:
            body = body or wire.check_body(parse_json(raw, bounds))
            instances = body.get("instances")
            if isinstance(instances, list):
                limits.check_instances(bounds, len(instances))
            inputs, row_format = wire.decode_predict(body, signature, name)
        limits.check_tensors(bounds, inputs.items(), row_format)
        result = state.service.predict(loaded, InferenceRequest(
            model=loaded.name, inputs=inputs, version=str(loaded.version), signature=name))
    exact = settings.of(state.settings).exact_numbers
    return tf_response(state, wire.encode_predict(result.outputs, row_format, exact))


def predict_instances(state: PredictState, loaded: LoadedVersion, body: dict[str, Any]
                      ) -> dict[str, Any]:
    """Row and columnar bodies of a predictor whose own door is ``predict(instances)``:
    the JSON list goes in as the instances."""
    key = wire.data_key(body)
    instances = body[key]
    if not isinstance(instances, list) or not instances:
        raise InvalidInput(f"JSON Value: {wire.short(instances)} Expecting '{key}' to be a "
                           "non-empty list/array")
    limits.check_instances(state.settings.limits, len(instances))
    kwargs = {k: v for k, v in body.items() if k != key}
    predictions = state.service.predict_instances(loaded, instances, kwargs)
    return {"predictions" if key == "instances" else "outputs": predictions}


def classify(model: str, version: str | None = None,
             label: str | None = None) -> ResponseReturnValue:
    return _on_examples(model, version, label, ModelService.classify, wire.encode_classify)


def regress(model: str, version: str | None = None,
            label: str | None = None) -> ResponseReturnValue:
    return _on_examples(model, version, label, ModelService.regress, wire.encode_regress)


Result = TypeVar("Result")


def _on_examples(model: str, version: str | None, label: str | None,
                 verb: Callable[[ModelService, LoadedVersion, Sequence[Example], str | None],
                                Result],
                 encode: Callable[[Result, int], dict[str, Any]]) -> ResponseReturnValue:
    """``:classify`` and ``:regress``: the examples decoded before the version is held, the
    service's *verb* run on them, its result encoded."""
    state = request_state()
    body = wire.check_body(read_json(state))
    examples = wire.decode_examples(body)
    with serving(state, model, version, label) as loaded:
        result = verb(state.service, loaded, examples, wire.signature_name(body))
    return tf_response(state, encode(result, len(examples)))


def explain(model: str, version: str | None = None,
            label: str | None = None) -> ResponseReturnValue:
    """KServe V1's ``:explain``: a predict body in, predictions and explanations out."""
    state = request_state()
    body = wire.check_body(read_json(state))
    with serving(state, model, version, label) as loaded:
        return tf_response(state, explain_answer(state, loaded, body))


# --- routes ---------------------------------------------------------------------------------

def _route(suffix: str, view: Callable[..., ResponseReturnValue], method: str) -> None:
    for form in VERSION_FORMS:
        rule = f"/v1/models/<model>{form}{suffix}"
        endpoint = f"{view.__name__}{form.split('/')[1] if form else ''}"
        # no automatic OPTIONS: TF Serving answers it "Malformed request" (no CORS)
        bp.add_url_rule(rule, endpoint, view, methods=[method], provide_automatic_options=False)


_route("", model_status, "GET")
_route("/metadata", model_metadata, "GET")
_route(":predict", predict, "POST")
_route(":classify", classify, "POST")
_route(":regress", regress, "POST")
_route(":explain", explain, "POST")

VIEWS: dict[str, Callable[..., ResponseReturnValue]] = {
    "status": model_status, "metadata": model_metadata, "predict": predict,
    "classify": classify, "regress": regress, "explain": explain}


@bp.route(f"/<{routing.CONVERTER}:v1>/<path:rest>", methods=ALL_METHODS,
          provide_automatic_options=False)
def dispatch(v1: str, rest: str) -> ResponseReturnValue:
    """Every other ``(?i)/v1/`` path and method, matched as TF Serving matches it."""
    found = routing.match(request.method, f"/{v1}/{rest}")
    if found.view == "missing_model":
        raise InvalidInput("Missing model name in request.")
    view = VIEWS.get(found.view)
    if view is None:
        raise malformed()
    return view(found.model, found.version, found.label)


def tf_response(state: PredictState, payload: Any) -> Response:
    """*payload* printed as TF Serving prints it (numbers by its ``WriteDecimal``), or with
    the shortest text of each number (``PREDICT_TFSERVING_NUMBERS = "shortest"``)."""
    exact = settings.of(state.settings).exact_numbers
    return Response(codecs.dumps_tfserving(payload, exact), mimetype=JSON_MIMETYPE)


bp.register_error_handler(Exception, error_handler(json_error))
