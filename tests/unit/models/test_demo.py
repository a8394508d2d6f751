"""flask_predict.models.demo: a demo model is written and listed only where both the framework that
builds it and the plugin that serves it are installed; the note names what to install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flask_predict.models import demo


def listed(out: Path) -> set[str]:
    return set(json.loads((out / "models.json").read_text())["models"])


def test_models_without_their_plugin_are_skipped(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo.plugins, "installed_names", lambda: ["sklearn"])
    lines: list[str] = []
    config = demo.write_demo(tmp_path, echo=lines.append)
    assert set(config) == listed(tmp_path) == {"iris", "churn"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["churn", "iris", "models.json"]
    assert "iris: written (sklearn)" in lines and "churn: written (sklearn)" in lines
    assert ("iris_names: skipped (the custom plugin is not installed: "
            "pip install 'flask-predict[custom]')") in lines
    assert ("loans: skipped (the xgboost plugin is not installed: "
            "pip install 'flask-predict[xgboost]')") in lines
    assert lines[-1] == f"{tmp_path / 'models.json'}: serves iris, churn"


def test_a_model_already_written_is_not_listed_once_its_plugin_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo.plugins, "installed_names", lambda: ["sklearn", "custom"])
    demo.write_demo(tmp_path, echo=lambda line: None)
    assert listed(tmp_path) == {"iris", "iris_names", "churn"}
    monkeypatch.setattr(demo.plugins, "installed_names", lambda: ["sklearn"])
    demo.write_demo(tmp_path, echo=lambda line: None)
    assert listed(tmp_path) == {"iris", "churn"}  # the folder stays; serve never sees it


def test_a_missing_framework_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(base: Path) -> Path:
        raise AssertionError("built without its framework")

    monkeypatch.setattr(demo, "DEMO_MODELS", {
        "ghost": (never, "no_such_framework", {"predictor": "sklearn"})})
    lines: list[str] = []
    assert demo.write_demo(tmp_path, echo=lines.append) == {}
    assert lines == ["ghost: skipped (no_such_framework is not installed)",
                     f"{tmp_path / 'models.json'}: serves nothing"]
