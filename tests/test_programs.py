"""tests/programs.py: a missing program skips its test with one line naming the package, or
fails it where CI sets TESTS_NO_SKIP."""

from __future__ import annotations

import pytest

from tests import programs


def test_a_program_on_the_path_is_found() -> None:
    assert programs.need("sh", "dash").endswith("/sh")


def test_a_missing_program_skips_naming_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(programs.NO_SKIP, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        programs.need("no-such-program-here", "some-package")
    assert str(skipped.value) == ("needs no-such-program-here: install Debian's some-package "
                                  "(make system-deps)")


def test_under_ci_it_fails_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(programs.NO_SKIP, "1")
    with pytest.raises(pytest.fail.Exception, match="TESTS_NO_SKIP is set"):
        programs.need("no-such-program-here", "some-package")
