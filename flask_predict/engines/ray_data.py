"""Ray Data: a callable class for ``Dataset.map_batches``; each actor loads the model once.

.. code-block:: python

    from flask_predict.engines.ray_data import ScoreBatches

    scored = dataset.map_batches(ScoreBatches, fn_constructor_kwargs={"path": "/models/churn"},
                                 batch_format="pandas", concurrency=2)

Nothing here imports Ray: Ray calls the class.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .partitions import ModelRef, score


class ScoreBatches:
    """Scores pandas batches with the model at *path*: the columns *keep* of each batch,
    then one per output (*outputs*, default all)."""

    def __init__(self, path: str, outputs: Sequence[str] | None = None,
                 keep: Sequence[str] = (), predictor: str | None = None,
                 options: Mapping[str, Any] | None = None, version: int | None = None) -> None:
        self.ref = ModelRef.of(path, outputs, predictor, options, version)
        self.keep = tuple(keep)
        self.ref.model()  # loaded as the actor starts, not with its first batch

    def __call__(self, batch: Any) -> Any:
        return score(self.ref, batch, self.keep)
