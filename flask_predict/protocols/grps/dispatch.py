"""What both grps front ends share (the ``/grps/v1`` routes and the gRPC ``GrpsService``):
the server-wide state, how a message names its model, which service call answers it, and
the metadata texts. No Flask here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import TYPE_CHECKING, Any, Iterator

from . import wire, yaml_text
from ...request import limits
from ...errors import InvalidInput, ModelNotFound, ModelNotReady
from ...models.served import LoadedVersion, ServedModel
from ...observability.traffic import Samples
from ...types import InferenceRequest, Tensor
from .gmap import gmap_row

if TYPE_CHECKING:  # the state module is Flask's side; only its type is needed here
    from ...core.state import PredictState

STATE_KEY = "grps"


@dataclass
class GrpsState:
    """The grps objects of one app (its online switch is the service's)."""

    default_model: str | None
    samples: Samples = field(default_factory=Samples)
    """The monitor's snapshots of the metrics, for its rates (this worker's own)."""


def grps_state(state: PredictState) -> GrpsState:
    """The grps state the ``/grps/v1`` blueprint opened for this app."""
    grps: GrpsState = state.extras[STATE_KEY]
    return grps


def is_ready(state: PredictState) -> bool:
    """grps readiness: the server is online and every model is loaded."""
    return state.service.online and state.service.ready


def unready_reason(state: PredictState) -> str | None:
    """Why the server is not ready (the message of its 503), or ``None`` when it is."""
    try:
        state.service.check_configured()
    except ModelNotReady as exc:
        return exc.message
    return None if is_ready(state) else "Service Unavailable"


# --- models -----------------------------------------------------------------------------------

def split_model_id(model_id: str, names: list[str]) -> tuple[str, str | None] | None:
    """A grps model id as (model name, version name or ``None`` for the default):
    ``name``, ``name-<version>`` or ``name-<label>``; ``None`` when no model has the name."""
    if model_id in names:
        return model_id, None
    name, dash, version = model_id.rpartition("-")
    if dash and name in names and version:
        return name, version
    return None


def acquire_model(state: PredictState, model_id: str) -> LoadedVersion:
    """Hold the version a grps model id names (the caller releases it)."""
    found = split_model_id(model_id, state.service.names())
    if found is None:
        raise ModelNotFound(f"Model {model_id} not found.")
    return state.service.acquire(found[0], version_name=found[1])


def default_model(state: PredictState) -> str:
    """The model a message that names none is for."""
    default = grps_state(state).default_model
    if default:
        return default
    names = state.service.names()
    if len(names) == 1:
        return names[0]
    raise InvalidInput(f"no model given: set \"model\" in the body or ?model= to one of "
                       f"{names} (name or name-version), or configure "
                       "PREDICT_GRPS_DEFAULT_MODEL")


# --- predict ----------------------------------------------------------------------------------

def check_limits(state: PredictState, message: wire.GrpsRequest) -> None:
    """413 for tensors past ``PREDICT_MAX_INSTANCES`` or ``PREDICT_MAX_TENSOR_ELEMENTS``."""
    if message.is_tensors:
        limits.check_tensors(state.settings.limits,
                             ((name or "ndarray", array) for name, array in message.value))


def predict(state: PredictState, loaded: LoadedVersion,
            message: wire.GrpsRequest) -> tuple[str, Any]:
    """The answer's payload (kind, value) from the held version *loaded*: model outputs
    for tensors (and a table's gmap row), else what the predictor's instances door returns
    (tensors too, as arrays, for a custom predictor that declares no signature; see
    :func:`wire.encode_predictions`)."""
    inputs = tensor_inputs(loaded, message)
    if inputs is not None:
        return "outputs", predict_tensors(state, loaded, inputs)
    predictions = state.service.predict_instances(loaded, message.instances(), {})
    return wire.encode_predictions(predictions)


def predict_stream(state: PredictState, loaded: LoadedVersion,
                   message: wire.GrpsRequest) -> Iterator[tuple[str, Any]]:
    """One payload per message the model streams (a tensor model answers once)."""
    inputs = tensor_inputs(loaded, message)
    if inputs is not None:
        return iter([("outputs", predict_tensors(state, loaded, inputs))])
    return (wire.encode_predictions(predictions) for predictions in
            state.service.predict_stream(loaded, message.instances(), {}))


def tensor_inputs(loaded: LoadedVersion, message: wire.GrpsRequest) -> dict[str, Tensor] | None:
    """The model's inputs from a message for its tensor door: its tensors, or for a model
    fitted on a table a gmap as one row; ``None`` for the instances door."""
    if loaded.metadata.instances_door:
        return None
    signature = loaded.metadata.signature
    if message.is_tensors:
        return wire.bind_inputs(message.value, signature)
    if message.kind == "gmap" and signature.tabular:
        return gmap_row(message.value)
    return None


def predict_tensors(state: PredictState, loaded: LoadedVersion,
                    inputs: dict[str, Tensor]) -> dict[str, Tensor]:
    result = state.service.predict(loaded, InferenceRequest(model=loaded.name, inputs=inputs,
                                                            version=str(loaded.version)))
    return result.outputs


def answer(kind: str, value: Any) -> dict[str, Any]:
    """A successful answer holding one payload, as JSON (model outputs as ``gtensors``)."""
    if kind == "outputs":
        return wire.message("gtensors", wire.encode_gtensors(value))
    return wire.message(kind, value)


# --- metadata ---------------------------------------------------------------------------------

def server_metadata(state: PredictState) -> str:
    """The server's metadata as YAML text (``str_data``)."""
    try:
        own_version = package_version("flask-predict")
    except PackageNotFoundError:
        own_version = "unknown"
    return yaml_text.to_yaml({
        "server": {"name": state.settings.process.server_name, "version": own_version,
                   "protocols": list(state.settings.protocols),
                   "default_model": grps_state(state).default_model},
        "models": [describe_model(served) for served in state.service.models()],
    })


def model_metadata(state: PredictState, model_id: Any) -> str:
    """Model *model_id*'s metadata as YAML text (``str_data``)."""
    if not model_id or not isinstance(model_id, str):
        raise InvalidInput("No model name.")
    try:
        loaded = acquire_model(state, model_id)
    except ModelNotFound:
        raise ModelNotFound(f"Model not found: {model_id}")
    try:
        return yaml_text.to_yaml(describe_model(state.service.model(loaded.name), loaded))
    finally:
        loaded.release()


def describe_model(served: ServedModel, loaded: LoadedVersion | None = None) -> dict[str, Any]:
    """What metadata shows of a model: versions, platform, inputs and outputs."""
    description: dict[str, Any] = {"name": served.name,
                                   "versions": sorted(served.versions)}
    failed = {v: status.error for v, status in sorted(served.statuses.items()) if status.error}
    if failed:  # versions that failed to load, with the cause (model lifecycle)
        description["failed_versions"] = failed
    if loaded is None and served.versions:
        loaded = served.default()
    if loaded is not None:
        signature = loaded.metadata.signature
        description.update({
            "version": loaded.version,
            "platform": loaded.metadata.platform,
            "inputs": [_describe_tensor(spec.name, spec.datatype, spec.shape)
                       for spec in signature.inputs],
            "outputs": [_describe_tensor(spec.name, spec.datatype, spec.shape)
                        for spec in signature.outputs],
        })
    return description


def _describe_tensor(name: str, datatype: str, shape: tuple[int, ...] | None) -> dict[str, Any]:
    return {"name": name, "dtype": wire.V2_TO_DTYPE.get(datatype, datatype),
            "shape": list(shape) if shape is not None else None}
