"""The modules' names before the root was grouped by part still import, as the same modules:
a plugin or a gunicorn config written for the old layout keeps working."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest
from gunicorn.util import load_class

from flask_predict.moved import OLD_NAMES
from tests.e2e.server import ROOT


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_an_old_name_is_the_module_itself(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(OLD_NAMES[old])


def test_a_plugin_and_a_gunicorn_config_of_the_old_layout() -> None:
    """In a fresh process: the names a plugin imported (its manifest, the table helpers) and
    the worker class a gunicorn config named."""
    script = textwrap.dedent("""
        from flask_predict.plugins import Manifest, lazy_attributes
        from flask_predict.tabular import Column, read_columns
        from flask_predict import artifacts, runtime
        import flask_predict.models.plugins as now
        assert Manifest is now.Manifest and artifacts.__name__ == "flask_predict.models.artifacts"
        print(runtime.__name__ == "flask_predict.core.runtime")
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]
    worker = load_class("flask_predict.sync_worker.SyncWorker")
    assert worker.__module__ == "flask_predict.process.sync_worker"


def test_a_name_that_never_was_is_still_missing() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("flask_predict.no_such_module")
