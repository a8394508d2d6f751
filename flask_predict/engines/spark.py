"""Spark: a model folder scored on a Spark DataFrame with ``mapInPandas``, the model loaded
once per Python worker process of each executor (Spark reuses its Python workers).

.. code-block:: python

    from flask_predict.engines import spark

    scored = spark.predict(customers, "/models/churn", outputs=["predict"], keep=["id"])
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from .. import codecs
from ..types import TensorSpec
from .partitions import ModelRef, score

SPARK_TYPES = {"FP64": "double", "FP32": "float", "FP16": "float", "INT64": "bigint",
               "INT32": "int", "INT16": "smallint", "INT8": "tinyint", "UINT8": "smallint",
               "UINT16": "int", "UINT32": "bigint", "BOOL": "boolean", "BYTES": "string"}
"""An output's V2 datatype -> its Spark SQL type (``string`` for any other)."""


def predict(frame: Any, path: str, outputs: Sequence[str] | None = None,
            keep: Sequence[str] = (), predictor: str | None = None,
            options: Mapping[str, Any] | None = None, version: int | None = None) -> Any:
    """*frame* (a ``pyspark.sql.DataFrame`` holding the model's columns, and *keep*)
    scored by the model at *path*: the columns *keep*, then one per output (*outputs*,
    default all). The path must be readable from every executor.

    The model is loaded here once, to learn its outputs' types, and once in each Python
    worker process that scores a partition.
    """
    ref = ModelRef.of(path, outputs, predictor, options, version)
    kept = [field.simpleString() for field in frame.schema.fields if field.name in keep]
    schema = ", ".join(kept + [f"`{spec.name}` {spark_type(spec)}"
                               for spec in ref.output_specs()])
    texts = [spec.name for spec in ref.output_specs() if spark_type(spec) == "string"]
    keep = tuple(keep)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            scored = score(ref, batch, keep)
            for name in texts:  # an output of any type: text as it is, else its JSON
                scored[name] = [value if isinstance(value, str) or value is None
                                else codecs.dumps(value).decode() for value in scored[name]]
            yield scored

    return frame.mapInPandas(run, schema)


def spark_type(spec: TensorSpec) -> str:
    """The Spark SQL type of one row's value of output *spec*."""
    kind = SPARK_TYPES.get(spec.datatype, "string")
    if spec.shape is not None and len(spec.shape) > 1 and kind != "string":
        return f"array<{kind}>"
    return kind
