"""The MLflow scoring protocol's section of the settings: which model ``/invocations``
answers, and what ``GET /execution-parameters`` tells SageMaker's batch transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...errors import ConfigError, did_you_mean
from ...settings.values import choice_value, number_value
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
        batch_strategy=choice_value(values, "PREDICT_MLFLOW_BATCH_STRATEGY", BATCH_STRATEGIES))


def of(settings: HasSections) -> MlflowSettings:
    """This protocol's section of *settings*."""
    section: MlflowSettings = settings.sections["mlflow"]
    return section


SECTION = Section(defaults={"PREDICT_MLFLOW_MODEL": None,
                            "PREDICT_MLFLOW_MAX_CONCURRENT_TRANSFORMS": 1,
                            "PREDICT_MLFLOW_BATCH_STRATEGY": "MULTI_RECORD"},
                  read=read)
