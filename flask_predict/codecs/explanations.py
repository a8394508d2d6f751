"""An :class:`~flask_predict.explanation.Explanation` as JSON: one object per row in the
shape of Google's ``Explanation`` (Vertex AI's ``explain``, AI Platform's
``projects.explain``), which KServe's V1 ``:explain`` answers too.

Each row is ``{"attributions": [...]}`` with one ``Attribution`` per explained output:
``baselineOutputValue``, ``instanceOutputValue``, ``featureAttributions`` (input name ->
a number for a column, a list for a row of features), ``outputIndex`` (only where several
outputs are explained: ``[k]``), ``outputDisplayName`` (the output's label, where it has
one), ``outputName`` and ``approximationError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explanation import Explanation


def explanation_rows(explanation: Explanation) -> list[dict[str, Any]]:
    """One ``Explanation`` object per row of *explanation*."""
    baseline = np.asarray(explanation.baseline, dtype=np.float64).tolist()
    output = np.asarray(explanation.output, dtype=np.float64).tolist()
    gap = explanation.gap().tolist()
    values = {name: np.asarray(array, dtype=np.float64).tolist()
              for name, array in explanation.attributions.items()}
    several = len(baseline[0]) > 1 if baseline else False
    rows = []
    for row in range(explanation.rows):
        attributions = []
        for k in range(len(baseline[row])):
            attribution: dict[str, Any] = {
                "baselineOutputValue": baseline[row][k],
                "instanceOutputValue": output[row][k],
                "featureAttributions": {name: per_row[row][k]
                                        for name, per_row in values.items()},
            }
            if several:
                attribution["outputIndex"] = [k]
            if explanation.labels:
                attribution["outputDisplayName"] = explanation.labels[k]
            attribution["approximationError"] = gap[row][k]
            attribution["outputName"] = explanation.output_name
            attributions.append(attribution)
        rows.append({"attributions": attributions})
    return rows
