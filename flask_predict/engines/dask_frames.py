"""Dask: a model folder scored on each partition of a Dask DataFrame (``map_partitions``),
the model loaded once per worker process.

.. code-block:: python

    from flask_predict.engines import dask_frames

    scored = dask_frames.predict(customers, "/models/churn", outputs=["predict"])
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import codecs
from .partitions import ModelRef, score


def predict(frame: Any, path: str, outputs: Sequence[str] | None = None,
            keep: Sequence[str] = (), predictor: str | None = None,
            options: Mapping[str, Any] | None = None, version: int | None = None) -> Any:
    """*frame* (a ``dask.dataframe.DataFrame``) scored by the model at *path*, lazily: the
    columns *keep*, then one per output (*outputs*, default all)."""
    import pandas as pd

    ref = ModelRef.of(path, outputs, predictor, options, version)
    meta = pd.DataFrame({name: pd.Series(dtype=frame.dtypes[name]) for name in keep})
    for spec in ref.output_specs():
        dtype = codecs.V2_TO_NUMPY.get(spec.datatype, np.dtype(object))
        two_d = spec.shape is not None and len(spec.shape) > 1
        meta[spec.name] = pd.Series(dtype=object if two_d or spec.datatype == "BYTES"
                                    else dtype)
    return frame.map_partitions(predict_partition, ref, tuple(keep), meta=meta)


def predict_partition(partition: Any, ref: ModelRef, keep: Sequence[str] = ()) -> Any:
    """One partition scored (``map_partitions``' function)."""
    return score(ref, partition, keep)
