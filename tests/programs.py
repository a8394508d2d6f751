"""Programs from Debian's packages that some tests need (nginx, wrk, Chromium, podman): a test
finds them on ``PATH`` (or in ``/usr/sbin``), else it skips with one line that names the
package to install (``make system-deps`` installs them all on Debian).

CI installs them all and sets ``TESTS_NO_SKIP=1`` (``.ci/run``): there a missing
program fails its tests instead, so CI never passes with them skipped."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

NO_SKIP = "TESTS_NO_SKIP"
"""Set (to anything but empty): a missing program fails the test instead of skipping it. Not
a ``FLASK_PREDICT_*`` name: the servers the tests start take those for settings, and refuse
the ones they do not know."""
SEARCHED = ("/usr/sbin", "/sbin")
"""Searched after ``PATH``: Debian puts nginx there, outside a non-root user's ``PATH``."""


def find(program: str) -> str | None:
    """The path of *program*, or ``None``."""
    path = os.pathsep.join([os.environ.get("PATH", ""), *SEARCHED])
    return shutil.which(program, path=path)


def need(program: str, package: str) -> str:
    """The path of *program*; without it the calling test skips (fails under
    ``$TESTS_NO_SKIP``) saying that Debian's *package* provides it."""
    found = find(program)
    if found is None:
        unavailable(f"needs {program}: install Debian's {package} (make system-deps)")
    return found


def unavailable(reason: str) -> NoReturn:
    """Skip the calling test for *reason*, or fail it where CI asked for every test to run."""
    if os.environ.get(NO_SKIP):
        pytest.fail(f"{reason}; {NO_SKIP} is set, so this test may not skip", pytrace=False)
    pytest.skip(reason)
