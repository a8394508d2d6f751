"""Which model and version a V2 request names, with Triton's words for what is not served
(clients written against Triton look for them: its example clients test an unknown
model's error for ``Request for unknown model``). Shared by the REST routes and the gRPC
servicer; no Flask here.

Triton's texts (``src/model_repository_manager`` and ``src/server.cc`` of
triton-inference-server/core): ``Request for unknown model: 'm' is not found``, ``... 'm'
version 7 is not found``, ``... 'm' has no available versions``; the statistics
extension's ``requested model 'm' is not available``. The statuses stay ours (404, 503).
"""

from __future__ import annotations

from ...core.service import ModelService
from ...errors import ModelNotFound, ModelNotReady
from ...models.served import LoadedVersion, ServedModel
from ...observability.statistics import VersionStats


def unknown_model(model: str) -> str:
    return f"Request for unknown model: '{model}' is not found"


def unknown_version(model: str, version: str) -> str:
    return f"Request for unknown model: '{model}' version {version} is not found"


def serving(service: ModelService, model: str, version: str | None) -> LoadedVersion:
    """Hold the version a request names (use it as a context manager, as
    ``service.use``)."""
    try:
        return service.acquire(model, version or None)
    except ModelNotFound:
        served(service, model)  # an unknown model says so
        raise ModelNotFound(unknown_version(model, version) if version
                            else unknown_model(model)) from None
    except ModelNotReady as exc:
        if not served(service, model, wait=False).versions:
            raise ModelNotReady(f"Request for unknown model: '{model}' has no available "
                                "versions") from exc
        raise


def served(service: ModelService, model: str, wait: bool = True) -> ServedModel:
    """The configured model *model* (404 in Triton's words when it is not)."""
    try:
        return service.model(model, wait=wait)
    except ModelNotFound:
        raise ModelNotFound(unknown_model(model)) from None


def version_ready(service: ModelService, model: str, version: str | None) -> bool:
    """Model readiness: any version loaded, or that *version* (one never seen: 404)."""
    entry = served(service, model, wait=False)
    if not version:
        return entry.ready
    number = int(version) if version.isdigit() else None
    if number is None or (number not in entry.versions and number not in entry.statuses):
        raise ModelNotFound(unknown_version(model, version))
    return number in entry.versions


def statistics(service: ModelService, model: str | None, version: str | None
               ) -> list[tuple[str, str, VersionStats]]:
    """The statistics of every model, of *model* or of that *version*; a model that is not
    served is Triton's ``requested model 'm' is not available``."""
    try:
        return service.statistics(model, version)
    except ModelNotFound:
        if model and model not in service.names():
            raise ModelNotFound(f"requested model '{model}' is not available") from None
        raise
