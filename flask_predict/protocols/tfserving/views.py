"""The TF Serving REST routes: status, metadata, predict, classify, regress.

Every route has the ``/versions/<n>`` and ``/labels/<label>`` forms. Errors answer
``{"error": "<message>"}`` with TF Serving's status codes; any other ``/v1/models`` URL or
method is TF Serving's 400 ``Malformed request``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable

from flask import Blueprint, request
from flask.typing import ResponseReturnValue

from ... import codecs
from ...errors import InvalidInput
from ...served import LoadedVersion
from ...state import get_state
from ...types import InferenceRequest
from .._http import json_error, json_response, parse_json, read_body, read_json
from . import lookup, wire

bp = Blueprint("predict_tfserving", __name__)

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
VERSION_FORMS = ("", "/versions/<version>", "/labels/<label>")
INT64_MAX = 2**63 - 1


def parse_version(version: str | None) -> int | None:
    """A URL version: digits only (else the URL is malformed), within int64."""
    if version is None:
        return None
    if not (version.isdigit() and version.isascii()):
        raise malformed()
    number = int(version)
    if number > INT64_MAX:
        raise InvalidInput(f"Failed to convert version: {version} to numeric.")
    return number


def serving(model: str, version: str | None, label: str | None
            ) -> AbstractContextManager[LoadedVersion]:
    """Hold the version a request names, with TF Serving's texts for what is not served."""
    return lookup.serving(get_state().service, model, parse_version(version), label)


def malformed() -> InvalidInput:
    return InvalidInput(f"Malformed request: {request.method} {request.full_path.rstrip('?')}")


# --- GET ------------------------------------------------------------------------------------

def model_status(model: str, version: str | None = None,
                 label: str | None = None) -> ResponseReturnValue:
    """Every version's state; a label is ignored, as in TF Serving."""
    if ":" in model:
        raise malformed()
    number = parse_version(version)
    served = lookup.served_model(get_state().service, model)
    return json_response(wire.encode_status(served, number))


def model_metadata(model: str, version: str | None = None,
                   label: str | None = None) -> ResponseReturnValue:
    with serving(model, version, label) as loaded:
        return json_response(wire.encode_metadata(loaded))


# --- POST -----------------------------------------------------------------------------------

def predict(model: str, version: str | None = None,
            label: str | None = None) -> ResponseReturnValue:
    """A body that is only ``{"instances": <matrix of numbers>}`` skips the JSON values
    (``codecs.number_matrix``) when the signature takes it as it is."""
    raw = read_body()
    matrix = codecs.number_matrix(raw, "instances")
    body = {} if matrix is not None else wire.check_body(parse_json(raw))
    service = get_state().service
    with serving(model, version, label) as loaded:
        if loaded.metadata.instances_door:
            body = body or wire.check_body(parse_json(raw))
            return json_response(predict_instances(loaded, body))
        name = wire.signature_name(body) or loaded.metadata.default_signature
        signature = loaded.metadata.signatures.get(name)
        if signature is None:
            raise InvalidInput(f'Serving signature name: "{name}" not found in signature def')
        inputs = wire.matrix_inputs(matrix, signature) if matrix is not None else None
        row_format = True
        if inputs is None:
            body = body or wire.check_body(parse_json(raw))
            inputs, row_format = wire.decode_predict(body, signature, name)
        result = service.predict(loaded, InferenceRequest(
            model=loaded.name, inputs=inputs, version=str(loaded.version), signature=name))
    return json_response(wire.encode_predict(result.outputs, row_format))


def predict_instances(loaded: LoadedVersion, body: dict[str, Any]) -> dict[str, Any]:
    """Row and columnar bodies of a predictor whose own door is ``predict(instances)``:
    the JSON list goes in as the instances."""
    key = wire.data_key(body)
    instances = body[key]
    if not isinstance(instances, list) or not instances:
        raise InvalidInput(f"JSON Value: {wire.short(instances)} Expecting '{key}' to be a "
                           "non-empty list/array")
    kwargs = {k: v for k, v in body.items() if k != key}
    predictions = get_state().service.predict_instances(loaded, instances, kwargs)
    return {"predictions" if key == "instances" else "outputs": predictions}


def classify(model: str, version: str | None = None,
             label: str | None = None) -> ResponseReturnValue:
    body = wire.check_body(read_json())
    examples = wire.decode_examples(body)
    with serving(model, version, label) as loaded:
        result = get_state().service.classify(loaded, examples, wire.signature_name(body))
    return json_response(wire.encode_classify(result, len(examples)))


def regress(model: str, version: str | None = None,
            label: str | None = None) -> ResponseReturnValue:
    body = wire.check_body(read_json())
    examples = wire.decode_examples(body)
    with serving(model, version, label) as loaded:
        values = get_state().service.regress(loaded, examples, wire.signature_name(body))
    return json_response(wire.encode_regress(values, len(examples)))


# --- routes ---------------------------------------------------------------------------------

def _route(suffix: str, view: Callable[..., ResponseReturnValue], method: str) -> None:
    for form in VERSION_FORMS:
        rule = f"/v1/models/<model>{form}{suffix}"
        endpoint = f"{view.__name__}{form.split('/')[1] if form else ''}"
        bp.add_url_rule(rule, endpoint, view, methods=[method])


_route("", model_status, "GET")
_route("/metadata", model_metadata, "GET")
_route(":predict", predict, "POST")
_route(":classify", classify, "POST")
_route(":regress", regress, "POST")


@bp.route("/v1/models", methods=ALL_METHODS)
def missing_model() -> ResponseReturnValue:
    if request.method == "GET":
        raise InvalidInput("Missing model name in request.")
    raise malformed()


@bp.route("/v1/models/<path:rest>", methods=ALL_METHODS)
def unknown_path(rest: str) -> ResponseReturnValue:
    raise malformed()


@bp.errorhandler(Exception)
def handle_error(exc: Exception) -> ResponseReturnValue:
    return json_error(exc)
