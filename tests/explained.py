"""Checks of explanations against the library that made the model: additivity, and each
attribution equal to the library's own contribution."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

RELATIVE = 1e-6
"""Attributions plus baseline equal the raw output to this much of the terms' size: the
libraries add float32 leaf values (about 1e-7 each), never worse than this for the few
dozen trees the tests train."""


def flat(values: Iterable[Any]) -> list[float]:
    """Numbers and lists of numbers, as one list."""
    found: list[float] = []
    for value in values:
        found.extend(np.ravel(np.asarray(value, dtype=np.float64)).tolist())
    return found


def assert_additive(attribution: Mapping[str, Any], raw: float) -> None:
    """One Google ``Attribution``: its baseline plus its feature attributions is *raw*, the
    library's own raw output, and so is its ``instanceOutputValue``."""
    terms = [attribution["baselineOutputValue"],
             *flat(attribution["featureAttributions"].values())]
    scale = max(abs(raw), sum(abs(term) for term in terms))
    assert abs(math.fsum(terms) - raw) <= RELATIVE * scale, (terms, raw)
    assert abs(attribution["instanceOutputValue"] - raw) <= RELATIVE * scale
    assert 0 <= attribution["approximationError"] <= RELATIVE * scale


def assert_contributions(attribution: Mapping[str, Any], names: Sequence[str] | None,
                         own: Sequence[float], bias: float) -> None:
    """The attributions of one output are the library's own contributions *own* (one per
    feature, by column *names*, or as the one input's list) and *bias* is the baseline."""
    features = attribution["featureAttributions"]
    got = [features[name] for name in names] if names else flat(features.values())
    np.testing.assert_allclose(got, own, rtol=RELATIVE, atol=RELATIVE * max(1.0, abs(bias)))
    assert math.isclose(attribution["baselineOutputValue"], bias, rel_tol=RELATIVE,
                        abs_tol=RELATIVE)


def rows_of(explanations: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Each row's attributions, checked for Google's ``Explanation`` shape."""
    rows = []
    for explanation in explanations:
        assert set(explanation) == {"attributions"}
        attributions = explanation["attributions"]
        assert attributions and all(
            {"baselineOutputValue", "instanceOutputValue", "featureAttributions",
             "approximationError", "outputName"} <= set(a) for a in attributions)
        if len(attributions) > 1:
            assert [a["outputIndex"] for a in attributions] == \
                [[k] for k in range(len(attributions))]
        rows.append(attributions)
    return rows


def assert_explains(rows: Sequence[Sequence[Mapping[str, Any]]], own: Any, raw: Any,
                    names: Sequence[str] | None, output_name: str) -> None:
    """Every row's every explained output (*rows*, from :func:`rows_of`) holds the
    library's own contributions *own* ``[N, K, F + 1]`` (the baseline last), by column
    *names* (in order) or as one list, and adds up to its raw output *raw* ``[N, K]``."""
    own = np.asarray(own).reshape(len(rows), -1, np.shape(own)[-1])
    raw = np.asarray(raw).reshape(len(rows), -1)
    for row, attributions in enumerate(rows):
        assert len(attributions) == own.shape[1]
        for k, attribution in enumerate(attributions):
            assert attribution["outputName"] == output_name
            if names is not None:
                assert list(attribution["featureAttributions"]) == list(names)
            assert_contributions(attribution, names, own[row, k, :-1], own[row, k, -1])
            assert_additive(attribution, float(raw[row, k]))
