"""The JSON comparison every protocol's case runner uses."""

from __future__ import annotations

import math
from typing import Any


def assert_json_close(got: Any, expected: Any, rel_tol: float = 1e-6, abs_tol: float = 1e-12,
                      path: str = "$") -> None:
    """Equal JSON values of the same types; floats compared with a tolerance."""
    if isinstance(expected, float):
        assert isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(
            got, expected, rel_tol=rel_tol, abs_tol=abs_tol), (path, got, expected)
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), (path, got, expected)
        for key in expected:
            assert_json_close(got[key], expected[key], rel_tol, abs_tol, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), (path, got, expected)
        for index, (g, e) in enumerate(zip(got, expected)):
            assert_json_close(g, e, rel_tol, abs_tol, f"{path}[{index}]")
    else:
        assert got == expected and type(got) is type(expected), (path, got, expected)
