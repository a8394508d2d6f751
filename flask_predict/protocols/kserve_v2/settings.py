"""The V2 section of the settings: how deeply a V2 REST body may nest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...request.descriptor import HasSections, Section
from ...settings.config import MAX_JSON_DEPTH_CEILING
from ...settings.values import number_value
from ...types import ModelSpec

ENVELOPE_DEPTH = 3
"""The levels around an input's ``data``: the body, its ``inputs`` list, the input."""


@dataclass(frozen=True)
class KserveV2Settings:
    """Validated ``PREDICT_KSERVE_V2_*`` keys."""

    max_data_depth: int
    """``PREDICT_KSERVE_V2_MAX_JSON_DEPTH``: levels an input's ``data`` may nest (Triton's
    limit is 100); it takes the place of ``PREDICT_MAX_JSON_DEPTH`` on the V2 routes."""

    @property
    def max_body_depth(self) -> int:
        """The same limit counted from the body's top."""
        return self.max_data_depth + ENVELOPE_DEPTH


def read(values: Mapping[str, Any], models: tuple[ModelSpec, ...]) -> KserveV2Settings:
    depth = number_value(values, "PREDICT_KSERVE_V2_MAX_JSON_DEPTH", int, minimum=1,
                         maximum=MAX_JSON_DEPTH_CEILING - ENVELOPE_DEPTH)
    return KserveV2Settings(max_data_depth=depth)


def of(settings: HasSections) -> KserveV2Settings:
    """This protocol's section of *settings*."""
    section: KserveV2Settings = settings.sections["kserve_v2"]
    return section


SECTION = Section(defaults={"PREDICT_KSERVE_V2_MAX_JSON_DEPTH": 100}, read=read)
