"""The MLflow scoring protocol's section of the settings: which model ``/invocations``
answers, and what ``GET /execution-parameters`` tells SageMaker's batch transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...errors import ConfigError, did_you_mean
from ...settings.values import bool_value, choice_value, number_value
from ...types import ModelSpec

BATCH_STRATEGIES = ("MULTI_RECORD", "SINGLE_RECORD")


@dataclass(frozen=True)
class MlflowSettings:
    """Validated ``PREDICT_MLFLOW_*`` keys."""

    model: str | None
    """``PREDICT_MLFLOW_MODEL``: the model ``/invocations`` answers when several are served
    and the request names none (SageMaker's ``X-Amzn-SageMaker-Target-Model``)."""
    max_concurrent_transforms: int
    """``PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS``: the requests the server takes at once
    (its workers), as ``/execution-parameters`` tells a batch transform job."""
    batch_strategy: str
    """``PREDICT_MLFLOW_BATCH_STRATEGY``: ``MULTI_RECORD`` or ``SINGLE_RECORD``."""
    multi_model: bool = False
    """``PREDICT_MLFLOW_MULTI_MODEL`` (``SAGEMAKER_MULTI_MODEL`` in the container): serve
    SageMaker's multi-model API (``/models``) over the lazy tier's root."""


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> MlflowSettings:
    model = values["PREDICT_MLFLOW_MODEL"] or None
    names = [spec.name for spec in models]
    if model is not None and models and model not in names:
        raise ConfigError(f"PREDICT_MLFLOW_MODEL: no model {model!r}"
                          f"{did_you_mean(str(model), names)}; configured: {sorted(names)}")
    return MlflowSettings(
        model=None if model is None else str(model),
        max_concurrent_transforms=number_value(
            values, "PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS", int, minimum=1),
        batch_strategy=choice_value(values, "PREDICT_MLFLOW_BATCH_STRATEGY", BATCH_STRATEGIES),
        multi_model=multi_model(values))


def multi_model(values: Mapping[str, Any]) -> bool:
    """``PREDICT_MLFLOW_MULTI_MODEL``, which needs a lazy tier to add models to."""
    on = bool_value(values, "PREDICT_MLFLOW_MULTI_MODEL")
    if on and not values.get("PREDICT_LAZY_ROOT"):
        raise ConfigError("PREDICT_MLFLOW_MULTI_MODEL needs PREDICT_LAZY_ROOT, the folder the "
                          "models are added from (SageMaker's /opt/ml/models)")
    return on


def of(settings: HasSections) -> MlflowSettings:
    """This protocol's section of *settings*."""
    section: MlflowSettings = settings.sections["mlflow"]
    return section


SECTION = Section(defaults={"PREDICT_MLFLOW_MODEL": None,
                            "PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS": 1,
                            "PREDICT_MLFLOW_BATCH_STRATEGY": "MULTI_RECORD",
                            "PREDICT_MLFLOW_MULTI_MODEL": False},
                  read=read)
