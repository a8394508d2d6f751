"""The grps tests' own custom models, beside the session-scoped iris, xgb and echo fixtures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("grps_predictors.py")


def make_grps_models(root: Path) -> dict[str, Any]:
    """``mirror`` and ``countdown`` custom models under *root*; returns their config."""
    config: dict[str, Any] = {}
    for name, cls in (("mirror", "Mirror"), ("countdown", "Countdown")):
        folder = root / name / "1"
        folder.mkdir(parents=True)
        shutil.copy(SOURCE, folder / "grps_predictors.py")
        config[name] = {"base_path": os.fspath(root / name), "predictor": "custom",
                        "class": f"grps_predictors.{cls}"}
    return config
