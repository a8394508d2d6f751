"""flask_predict.process.server_settings: a server process reads its environment into
Settings once and hands them to its hooks and to the app it builds."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from flask_predict.core.state import EXTENSION_KEY
from flask_predict.process import server_settings
from flask_predict.settings import app as settings_app
from flask_predict.wsgi import create_app  # builds its module's app once, at import


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """No settings read in this process yet; each read of a config recorded."""
    monkeypatch.setattr(server_settings, "_read", None)
    reads: list[object] = []
    real = settings_app.read_settings

    def counted(config: object) -> object:
        reads.append(config)
        return real(config)  # type: ignore[arg-type]

    monkeypatch.setattr(server_settings, "read_settings", counted)
    monkeypatch.setattr("flask_predict.extension.read_settings", counted)
    monkeypatch.setenv("FLASK_PREDICT_MODELS", "{}")
    yield reads


def test_a_worker_reads_its_environment_once_for_its_hooks_and_its_app(
        fresh: list[object]) -> None:
    assert server_settings.read_here() is None  # outside a server: the app reads its own
    settings = server_settings.read()  # the worker's start (post_fork)
    assert server_settings.current() is settings
    app = create_app()
    assert app.extensions[EXTENSION_KEY].settings is settings
    assert len(fresh) == 1


def test_outside_a_server_the_app_reads_its_config(fresh: list[object]) -> None:
    create_app()
    assert len(fresh) == 1 and server_settings.read_here() is None


def test_a_forked_process_reads_its_own(fresh: list[object]) -> None:
    settings = server_settings.read()
    pid = os.fork()
    if pid == 0:  # the child: what the master read is not its own
        os._exit(0 if server_settings.read_here() is None
                 and server_settings.current() is not settings else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
