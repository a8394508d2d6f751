"""V2's model repository extension (Triton's ``model_repository``): the index of the
configured models, and load / unload of one of them. No Flask here: the REST routes and the
gRPC servicer both call these functions.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_model_repository.md

Only configured models can be loaded: the model config file (or ``PREDICT_MODELS``) names
them and their ``base_path``; a name from a request is looked up there, never made into a
path. Unloading a model adds its name to a file in the server's shared state folder, loading
it removes it; every worker's watcher reads that file on each poll (the same mechanism as
new versions on disk), so every worker follows within ``PREDICT_POLL_SECONDS`` and a worker
that starts later reads it too. The worker that answers asks for a poll at once and waits
(up to ``PREDICT_LOAD_WAIT_SECONDS``) until it has followed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...errors import FailedPrecondition, InvalidInput, ModelNotFound, ModelNotReady, \
    Unimplemented
from . import wire

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ...state import PredictState
    from ...watcher import Watcher

MODEL_REPOSITORY = "model_repository"
STATISTICS = "statistics"

STATES = {"AVAILABLE": "READY", "LOADING": "LOADING", "UNLOADING": "UNLOADING",
          "END": "UNAVAILABLE"}
"""A version's state (TF Serving's names, :class:`~flask_predict.served.VersionStatus`) as
Triton's index names it."""
UNSUPPORTED_LOAD_PARAMETERS = ("config",)
"""Triton's load parameters that replace the model's files or configuration: refused."""


def extensions(state: PredictState) -> list[str]:
    """The V2 extensions this app serves (``GET /v2``): the repository extension needs the
    watcher (``PREDICT_POLL_SECONDS`` > 0 or background loading), statistics need
    ``PREDICT_METRICS``."""
    served = list(wire.EXTENSIONS)
    if state.watcher is not None and state.watcher.unloaded is not None:
        served.append(MODEL_REPOSITORY)
    if state.metrics is not None:
        served.append(STATISTICS)
    return served


def index(state: PredictState, ready_only: bool = False) -> list[dict[str, str]]:
    """Every configured model, one entry per version this worker knows of: ``name``,
    ``version`` (left out when no version is known), ``state`` (``READY``, ``LOADING``,
    ``UNLOADING``, ``UNAVAILABLE``) and ``reason``."""
    watcher = state.watcher
    configured = [spec.name for spec in
                  (watcher.specs if watcher is not None else state.settings.models)]
    unloaded = _unloaded(watcher)
    served = {model.name: model for model in state.service.models()}
    entries: list[dict[str, str]] = []
    for name in configured + [name for name in served if name not in configured]:
        model = served.get(name)
        if model is None:
            reason = "unloaded" if name in unloaded else "not loaded yet"
            entries.append({"name": name, "state": "UNAVAILABLE", "reason": reason})
        elif not model.statuses:
            entries.append({"name": name, "state": "UNAVAILABLE",
                            "reason": "no version folder found"})
        for version, status in sorted(model.statuses.items()) if model else ():
            reason = status.error or ("unloaded" if status.state == "END" else "")
            entries.append({"name": name, "version": str(version),
                            "state": STATES.get(status.state, status.state),
                            "reason": reason})
    if ready_only:
        entries = [entry for entry in entries if entry["state"] == "READY"]
    return entries


def read_index_request(body: Any) -> bool:
    """The ``ready`` flag of an index request body (``None``: no body)."""
    if body is None:
        return False
    if not isinstance(body, dict):
        raise InvalidInput("the index request must be a JSON object")
    ready = body.get("ready", False)
    if not isinstance(ready, bool):
        raise InvalidInput("'ready' must be a boolean")
    return ready


def check_parameters(parameters: Mapping[str, Any]) -> None:
    """Refuse what a load or unload cannot honour (a replacement model configuration)."""
    for name in UNSUPPORTED_LOAD_PARAMETERS:
        if name in parameters or any(key.startswith("file:") for key in parameters):
            raise InvalidInput(f"parameter {name!r} (and model files) are not supported: "
                               "models are loaded from their configured base_path")


def load(state: PredictState, name: str) -> None:
    """Serve configured model *name* in every worker (again); once this worker serves it,
    return. A model whose versions fail to load answers their errors (400); one still
    loading after ``PREDICT_LOAD_WAIT_SECONDS`` answers unavailable (503)."""
    watcher = _watcher(state, name, "load")
    assert watcher.unloaded is not None
    watcher.unloaded.discard(name)
    if not watcher.poll_now(state.settings.load_wait_seconds):
        raise ModelNotReady(f"failed to load '{name}': still loading; its state is in the "
                            "repository index")
    try:
        served = state.service.model(name)
    except ModelNotFound:
        raise ModelNotFound(f"failed to load '{name}': it left the model configuration")
    if not served.ready:
        errors = [status.error for status in served.statuses.values() if status.error]
        raise FailedPrecondition(f"failed to load '{name}': " + (
            "; ".join(errors) if errors else "no version found in its base_path"))


def unload(state: PredictState, name: str) -> None:
    """Stop serving configured model *name* in every worker; waits (up to
    ``PREDICT_LOAD_WAIT_SECONDS``) until this worker has dropped it. Requests already
    running on it finish."""
    watcher = _watcher(state, name, "unload")
    assert watcher.unloaded is not None
    watcher.unloaded.add(name)
    watcher.poll_now(state.settings.load_wait_seconds)


def _watcher(state: PredictState, name: str, verb: str) -> Watcher:
    """The watcher that loads and unloads, once *name* is known to be a configured model."""
    watcher = state.watcher
    if watcher is None or watcher.unloaded is None:
        raise Unimplemented("the model repository extension needs the model watcher: set "
                            "PREDICT_POLL_SECONDS above 0")
    try:
        configured = watcher.read_specs()
    except Exception:  # a broken config file: the last one read stays in force
        configured = watcher.specs
    if not any(spec.name == name for spec in configured):
        raise ModelNotFound(f"failed to {verb} '{name}': no model of that name in the "
                            "model configuration")
    return watcher


def _unloaded(watcher: Watcher | None) -> frozenset[str]:
    if watcher is None or watcher.unloaded is None:
        return frozenset()
    return watcher.unloaded.read()
