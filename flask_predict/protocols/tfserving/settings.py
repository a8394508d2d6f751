"""The TF Serving section of the settings: how its routes print numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...settings.values import choice_value
from ...types import ModelSpec


@dataclass(frozen=True)
class TfServingSettings:
    """Validated ``PREDICT_TFSERVING_*`` keys."""

    exact_numbers: bool
    """``PREDICT_TFSERVING_NUMBERS``: ``tfserving`` prints floats by its writer's rule,
    exactly; ``shortest`` prints the shortest text that reads back the same value (faster)."""


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> TfServingSettings:
    numbers = choice_value(values, "PREDICT_TFSERVING_NUMBERS", ("tfserving", "shortest"))
    return TfServingSettings(exact_numbers=numbers == "tfserving")


def of(settings: HasSections) -> TfServingSettings:
    """This protocol's section of *settings*."""
    section: TfServingSettings = settings.sections["tfserving"]
    return section


SECTION = Section(defaults={"PREDICT_TFSERVING_NUMBERS": "tfserving"}, read=read)
