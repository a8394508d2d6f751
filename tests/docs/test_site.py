"""The documentation site builds with warnings as errors: no broken link or anchor, no page
left out of the navigation, and every PREDICT_* setting documented."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flask_predict.settings.config import DEFAULTS
from tests.docs.examples import ROOT


def test_site_builds_without_warnings(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, build.stderr[-6000:]
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "openapi.json").exists()


def test_configuration_reference_has_every_setting() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [key for key in DEFAULTS if f"| `{key}` |" not in reference]
    assert not missing, f"docs/configuration.md has no row for {missing}"
