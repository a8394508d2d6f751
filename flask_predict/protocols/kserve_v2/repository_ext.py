"""V2's model repository extension (Triton's ``model_repository``) in V2's words: the
service's index, load and unload (:mod:`flask_predict.models.control`) translated. No Flask here:
the REST routes and the gRPC servicer both call these functions.

https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_model_repository.md
"""

from __future__ import annotations

from typing import Any, Mapping

from . import wire
from ...core.service import ModelService
from ...errors import InvalidInput

MODEL_REPOSITORY = "model_repository"
STATISTICS = "statistics"

STATES = {"AVAILABLE": "READY", "LOADING": "LOADING", "UNLOADING": "UNLOADING",
          "END": "UNAVAILABLE", "UNAVAILABLE": "UNAVAILABLE"}
"""A version's state (TF Serving's names, :class:`~flask_predict.models.served.VersionStatus`) as
Triton's index names it."""
UNSUPPORTED_LOAD_PARAMETERS = ("config",)
"""Triton's load parameters that replace the model's files or configuration: refused."""


def extensions(service: ModelService) -> list[str]:
    """The V2 extensions this app serves (``GET /v2``): the repository extension needs the
    model watcher (``PREDICT_POLL_SECONDS`` > 0 or background loading), statistics need
    ``PREDICT_METRICS``."""
    served = list(wire.EXTENSIONS)
    if service.can_load:
        served.append(MODEL_REPOSITORY)
    if service.metrics is not None:
        served.append(STATISTICS)
    return served


def index(service: ModelService, ready_only: bool = False) -> list[dict[str, str]]:
    """Every configured model, one entry per version this worker knows of: ``name``,
    ``version`` (left out when no version is known), ``state`` (``READY``, ``LOADING``,
    ``UNLOADING``, ``UNAVAILABLE``) and ``reason``."""
    entries: list[dict[str, str]] = []
    for entry in service.index():
        item = {"name": entry.name}
        if entry.version is not None:
            item["version"] = str(entry.version)
        item["state"] = STATES.get(entry.state, entry.state)
        item["reason"] = entry.reason
        entries.append(item)
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
