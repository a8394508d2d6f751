"""What every engine helper does on a partition: the model loaded once per process, a
pandas batch scored into output columns.

:class:`ModelRef` names a model folder and how to load it; it is what travels to an
engine's executors (small and picklable), and :meth:`ModelRef.model` loads it in each
executor process the first time it is asked, then reuses that copy.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..api import Model
from ..types import Tensor, TensorSpec

_models: dict[ModelRef, Model] = {}
"""This process's models, loaded once each (an executor process serves many batches)."""
_loading = threading.Lock()


@dataclass(frozen=True)
class ModelRef:
    """A model folder and how to load it, as :meth:`Model.load` takes them; *outputs*
    names the output columns a batch gets (default: the instances door's predictions for a
    custom routine, the method an MLflow model was saved to answer, else every output)."""

    path: str
    outputs: tuple[str, ...] | None = None
    predictor: str | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())
    version: int | None = None

    @classmethod
    def of(cls, path: str, outputs: Sequence[str] | None = None, predictor: str | None = None,
           options: Mapping[str, Any] | None = None, version: int | None = None) -> ModelRef:
        return cls(str(path), tuple(outputs) if outputs is not None else None, predictor,
                   tuple(sorted((options or {}).items())), version)

    def model(self) -> Model:
        """This process's copy of the model, loaded on first use."""
        with _loading:
            model = _models.get(self)
            if model is None:
                model = _models[self] = Model.load(self.path, predictor=self.predictor,
                                                   options=dict(self.options),
                                                   version=self.version)
            return model

    def output_specs(self) -> list[TensorSpec]:
        """The output columns a scored batch has, in order."""
        model = self.model()
        named = {spec.name: spec for spec in model.signature().outputs}
        return [named.get(name) or TensorSpec(name, "BYTES", None)
                for name in self.outputs or model.default_outputs]


def score(ref: ModelRef, batch: Any, keep: Sequence[str] = ()) -> Any:
    """*batch* (a pandas DataFrame) scored: the columns *keep* of it, then one column per
    output, one value per row (a row of a 2-D output as a list)."""
    import pandas as pd

    model = ref.model()
    inputs = batch.drop(columns=[name for name in keep if name in batch.columns
                                 and name not in _input_names(model)])
    outputs = model.predict(inputs, ref.outputs) if len(batch) else {}
    scored = pd.DataFrame({name: batch[name].to_numpy() for name in keep}, index=batch.index)
    for spec in ref.output_specs():
        scored[spec.name] = column(outputs[spec.name]) if len(batch) else []
    return scored


def column(values: Tensor) -> Any:
    """An output as one value per row: text for bytes, a list per row of a 2-D output."""
    if values.dtype.kind in "OS":
        return [value.decode("utf-8") if isinstance(value, bytes) else value
                for value in values.tolist()]
    if values.ndim > 1:
        return list(values.reshape(len(values), -1))
    return np.asarray(values)


def _input_names(model: Model) -> set[str]:
    return {spec.name for spec in model.signature().inputs}


def release() -> None:
    """Close every model this process loaded (an engine worker's shutdown; tests)."""
    with _loading:
        for model in _models.values():
            model.close()
        _models.clear()
