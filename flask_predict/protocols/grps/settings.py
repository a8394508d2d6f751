"""The grps section of the settings: the default model and whether a server starts online."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...settings.values import bool_value
from ...types import ModelSpec


@dataclass(frozen=True)
class GrpsSettings:
    """Validated ``PREDICT_GRPS_*`` keys."""

    default_model: str | None
    """The model a message that names none is for (a grps model id)."""
    start_online: bool


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> GrpsSettings:
    return GrpsSettings(default_model=values["PREDICT_GRPS_DEFAULT_MODEL"] or None,
                        start_online=bool_value(values, "PREDICT_GRPS_START_ONLINE"))


def of(settings: HasSections) -> GrpsSettings:
    """This protocol's section of *settings*."""
    section: GrpsSettings = settings.sections["grps"]
    return section


SECTION = Section(defaults={"PREDICT_GRPS_DEFAULT_MODEL": None,
                            "PREDICT_GRPS_START_ONLINE": True}, read=read)
