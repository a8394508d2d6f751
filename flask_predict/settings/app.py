"""The settings of an app: its config read with the sections of the protocols the table
registers. Every way of starting reads its settings here; the core's reader
(:func:`~.config.settings_from`) never looks the protocols up itself."""

from __future__ import annotations

from typing import Any, Mapping

from ..request.protocol_table import sections
from .config import Settings, settings_from


def read_settings(config: Mapping[str, Any]) -> Settings:
    """Validate the ``PREDICT_*`` keys of *config*; raise
    :class:`~flask_predict.errors.ConfigError` naming the key."""
    return settings_from(config, sections())
