"""Which loaded version a TF Serving request names, with TF Serving's texts for what is
not served. Shared by the REST routes and the gRPC ``PredictionService``/``ModelService``."""

from __future__ import annotations

from ...core.service import ModelService
from ...errors import FailedPrecondition, InvalidInput, ModelNotFound, ModelNotReady
from ...models.served import LoadedVersion, ServedModel


def serving(service: ModelService, model: str, version: int | None,
            label: str | None) -> LoadedVersion:
    """Hold the version a request names: ``Servable not found for request:
    Latest(<model>)`` (or ``Specific(<model>, <version>)``) when it is not served; an
    unknown label is TF Serving's InvalidArgument ``Unrecognized servable version label``."""
    try:
        return service.acquire(model, version, label)
    except FailedPrecondition as exc:
        raise InvalidInput(exc.message) from exc
    except (ModelNotFound, ModelNotReady) as exc:
        if label is not None and isinstance(exc, ModelNotFound) and "label" in exc.message:
            raise
        wanted = f"Specific({model}, {version})" if version is not None else f"Latest({model})"
        raise ModelNotFound(f"Servable not found for request: {wanted}") from exc


def served_model(service: ModelService, model: str) -> ServedModel:
    """The model whose versions a status request lists."""
    try:
        return service.model(model)
    except ModelNotFound:
        raise ModelNotFound(f"Could not find any versions of model {model}") from None
