"""The tally section: the key its answers use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from flask_predict.request.descriptor import HasSections, Section
from flask_predict.errors import ConfigError


@dataclass(frozen=True)
class TallySettings:
    label: str


def read(values: Mapping[str, Any], models: tuple[Any, ...]) -> TallySettings:
    label = values["PREDICT_TALLY_LABEL"]
    if not isinstance(label, str) or not label:
        raise ConfigError(f"PREDICT_TALLY_LABEL must be a non-empty string, got {label!r}")
    return TallySettings(label)


def of(settings: HasSections) -> TallySettings:
    section: TallySettings = settings.sections["tally"]
    return section


SECTION = Section(defaults={"PREDICT_TALLY_LABEL": "tally"}, read=read,
                  environ={"TALLY_LABEL": "PREDICT_TALLY_LABEL"})
