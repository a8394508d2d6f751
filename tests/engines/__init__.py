"""Models scored on Spark, Ray and Dask; each engine's own warnings left to it."""

import pytest

ENGINE_MARKS = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
"""The marks of every engine test module: end to end, and the engines' own warnings."""
