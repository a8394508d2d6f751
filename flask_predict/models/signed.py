"""An MLflow model's signature as its metadata and its input check, around a natively loaded
predictor.

``MLmodel``'s signature lists the model's columns (or tensors) with MLflow's types; they are
the metadata every protocol shows (a ``double`` column is ``FP64`` whatever the booster
computes in), and the input is checked the way ``mlflow.pyfunc`` enforces a schema
(``mlflow.models.utils._enforce_schema``): columns taken by name, in the signature's order,
extra ones ignored; a column marked ``required: false`` may be absent (a ``double`` or
``float`` one reaches a model that reads it as missing values, NaN); only safe casts (an
integer into a ``double`` column, a float32 into a ``double``; never a float into a ``long``,
a ``double`` into a ``float`` or a number into a ``string``); a missing required column or a
value of the wrong type is the client's error (400) naming the column.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from .. import codecs
from ..errors import InvalidInput
from ..predictor import Predictor
from ..types import ModelMetadata, Signature, Tensor, TensorSpec
from .mlmodel import MLflowModel

DATATYPES = {"double": "FP64", "float": "FP32", "long": "INT64", "integer": "INT32",
             "boolean": "BOOL", "string": "BYTES", "binary": "BYTES", "datetime": "BYTES"}
"""MLflow's column types -> the V2 datatype the metadata shows (a datetime travels as text)."""
NUMPY = {"double": np.float64, "float": np.float32, "long": np.int64, "integer": np.int32,
         "boolean": np.bool_}


@dataclass(frozen=True)
class ColumnSpec:
    """One column (or named tensor) of an MLflow signature."""

    name: str
    type: str
    """MLflow's type (``double``, ``long``, ``string``...), or ``tensor``."""
    required: bool = True
    dtype: str | None = None
    """A tensor's numpy dtype."""
    shape: tuple[int, ...] | None = None


def signature_inputs(model: MLflowModel) -> list[ColumnSpec] | None:
    """The inputs of *model*'s signature; ``None`` without one, or with one that names no
    input (a single unnamed tensor: the model is served as it was saved)."""
    return _signature_columns(model, "inputs")


def signature_outputs(model: MLflowModel) -> list[ColumnSpec] | None:
    """The outputs of *model*'s signature when they are columns of MLflow's scalar types (a
    single unnamed one is ``predictions``); ``None`` otherwise."""
    columns = _signature_columns(model, "outputs", unnamed="predictions")
    return columns if columns and all(c.type != "tensor" for c in columns) else None


def _signature_columns(model: MLflowModel, part: str,
                       unnamed: str | None = None) -> list[ColumnSpec] | None:
    raw = (model.signature or {}).get(part)
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if not isinstance(items, list) or not items:
        return None
    specs = []
    for item in items:
        if isinstance(item, dict) and "name" not in item and unnamed and len(items) == 1:
            item = {**item, "name": unnamed}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        kind = str(item.get("type"))
        tensor = item.get("tensor-spec") or {}
        if kind != "tensor" and kind not in DATATYPES:
            return None  # an object, array or map column: left to the model
        shape = tensor.get("shape")
        specs.append(ColumnSpec(item["name"], kind, bool(item.get("required", True)),
                                tensor.get("dtype"),
                                tuple(int(d) for d in shape) if isinstance(shape, list) else None))
    return specs


def signature_params(model: MLflowModel) -> list[dict[str, Any]]:
    """The signature's ``params``: name, type, default and shape of each."""
    raw = (model.signature or {}).get("params")
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return [item for item in items or () if isinstance(item, dict)]


def tensor_spec(column: ColumnSpec) -> TensorSpec:
    """The metadata of *column*."""
    if column.type == "tensor":
        dtype = np.dtype(column.dtype or "float64")
        return TensorSpec(column.name, codecs.NUMPY_TO_V2.get(dtype, "BYTES"), column.shape)
    return TensorSpec(column.name, DATATYPES[column.type], (-1,))


class SignedPredictor(Predictor):
    """A natively loaded MLflow model, described and checked by its signature."""

    def __init__(self, inner: Predictor, columns: Sequence[ColumnSpec],
                 params: Sequence[Mapping[str, Any]] = ()) -> None:
        self.inner = inner
        self.columns = tuple(columns)
        self.instance_outputs = inner.instance_outputs  # type: ignore[misc]
        meta = inner.metadata()
        own = meta.signature
        tabular = all(c.type != "tensor" for c in self.columns)
        signature = Signature(inputs=tuple(tensor_spec(c) for c in self.columns),
                              outputs=own.outputs, method_name=own.method_name, tabular=tabular)
        properties = dict(meta.properties)
        optional = [c.name for c in self.columns if not c.required]
        if optional:
            properties["optional_inputs"] = optional
        if params:
            properties["params"] = [dict(p) for p in params]
        self._metadata = replace(meta, signatures={**meta.signatures,
                                                   meta.default_signature: signature},
                                 properties=properties)
        self._inner_inputs = [spec.name for spec in own.inputs]
        self._doubles = tuple(c.name for c in self.columns) if all(
            c.type == "double" for c in self.columns) else None
        """The columns, where all are ``double``: a matrix of them needs no cast."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Predictor:
        raise TypeError("a SignedPredictor wraps a loaded predictor")

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        """Instances as MLflow takes them: objects naming columns (extras ignored, optional
        ones may be absent), or one value (list) per instance for a single input."""
        if not isinstance(instances, list) or not instances:
            raise InvalidInput("instances must be a non-empty list")
        if all(isinstance(row, dict) for row in instances):
            inputs = {c.name: _column(c, [row[c.name] for row in instances]) for c in
                      self.columns if _present(c, [c.name in row for row in instances])}
        elif len(self.columns) == 1:
            inputs = {self.columns[0].name: _column(self.columns[0], instances)}
        else:
            return codecs.tensors_to_rows(self.predict_tensors(
                codecs.rows_to_tensors(instances, self.signature()), self.instance_outputs))
        return codecs.tensors_to_rows(self._predict(inputs, self.instance_outputs))

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        if (isinstance(inputs, codecs.ColumnMatrix) and self._doubles is not None
                and codecs.matrix_of(inputs, self._doubles) is not None):
            return self._predict(inputs, outputs)  # float64 columns: no cast to make
        checked = {}
        for column in self.columns:
            if _present(column, [column.name in inputs]):
                checked[column.name] = _cast(column, np.asarray(inputs[column.name]))
        return self._predict(checked, outputs)

    def _predict(self, columns: dict[str, np.ndarray],
                 outputs: Sequence[str] | None) -> dict[str, Tensor]:
        names = self._inner_inputs
        if codecs.matrix_of(columns, names) is not None:
            return self.inner.predict_tensors(columns, outputs)  # the model's own columns
        if len(names) == 1 and names[0] not in columns and len(self.columns) > 1:
            stacked = (codecs.matrix_of(columns, self._doubles)
                       if self._doubles is not None else None)
            if stacked is not None:
                return self.inner.predict_tensors({names[0]: stacked}, outputs)
            try:
                matrix = np.column_stack([np.asarray(columns[c.name], dtype=np.float64)
                                          for c in self.columns if c.name in columns])
            except (TypeError, ValueError):
                raise InvalidInput("the model takes one matrix of numbers; a column of the "
                                   "input holds something else") from None
            return self.inner.predict_tensors({names[0]: matrix}, outputs)
        rows = len(next(iter(columns.values()))) if columns else 0
        absent: dict[str, np.ndarray] = {c.name: np.full(rows, np.nan, dtype=NUMPY[c.type]) for c in self.columns
                  if c.name not in columns and c.name in names and c.type in ("double", "float")}
        given = {**columns, **absent}  # an optional number left out is missing (NaN)
        return self.inner.predict_tensors(
            {name: given[name] for name in names if name in given} or given, outputs)

    def explain(self, inputs: Mapping[str, Tensor], signature: str | None = None) -> Any:
        return self.inner.explain(inputs, signature)

    def warmup_requests(self, model_dir: str) -> list[Any]:
        return self.inner.warmup_requests(model_dir)

    def after_fork(self) -> None:
        self.inner.after_fork()

    def close(self) -> None:
        self.inner.close()


def _present(column: ColumnSpec, found: list[bool]) -> bool:
    """Whether *column* is in every row (*found*); a required one missing is refused."""
    if all(found):
        return True
    if column.required or any(found):
        where = "some instances lack" if any(found) else "the input lacks"
        raise InvalidInput(f"{where} the required column {column.name!r}" if column.required
                           else f"{where} the optional column {column.name!r}: give it in "
                           "every instance or in none")
    return False


def _column(column: ColumnSpec, values: list[Any]) -> np.ndarray:
    """A column of JSON values as the array of its MLflow type, only by safe casts."""
    kind = column.type
    if kind == "tensor":
        return _cast(column, np.asarray(values))
    if kind in ("double", "float"):
        for value in values:
            if not (value is None or (isinstance(value, (int, float))
                                      and not isinstance(value, bool))):
                raise _wrong(column, value)
        return np.asarray([math.nan if v is None else v for v in values], dtype=NUMPY[kind])
    if kind in ("long", "integer"):
        for value in values:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _wrong(column, value)
        return _cast(column, np.asarray(values, dtype=np.int64))
    if kind == "boolean":
        for value in values:
            if not isinstance(value, bool):
                raise _wrong(column, value)
        return np.asarray(values, dtype=np.bool_)
    for value in values:
        if not (value is None or isinstance(value, (str, bytes))):
            raise _wrong(column, value)
    if kind == "datetime":
        try:
            return np.asarray(values, dtype="datetime64[ns]")
        except ValueError:
            raise InvalidInput(f"column {column.name!r} holds a value that is not a "
                               "datetime") from None
    return np.asarray(values, dtype=object)


def _cast(column: ColumnSpec, array: np.ndarray) -> np.ndarray:
    """*array* as *column*'s type where MLflow casts it safely; else refused (400)."""
    if column.type == "tensor":
        want = np.dtype(column.dtype or array.dtype)
        if array.dtype != want and not np.can_cast(array.dtype, want, casting="safe"):
            raise InvalidInput(f"input {column.name!r} is {array.dtype}, which does not cast "
                               f"safely to the signature's {want}")
        return array.astype(want, copy=False)
    kind = column.type
    got = array.dtype
    if kind in ("string", "binary", "datetime"):
        if got.kind in "OUS" or (kind == "datetime" and got.kind == "M"):
            return array
        raise _wrong_type(column, got)
    want = np.dtype(NUMPY[kind])
    if got == want:
        return array
    if got.kind == "O":
        return _column(column, array.tolist())
    safe = ((got.kind == want.kind and got.itemsize <= want.itemsize)
            or (got.kind == "u" and want.kind == "i" and got.itemsize < want.itemsize)
            or (got.kind in "iu" and want == np.float64 and got.itemsize <= 6)
            or (got.kind == "i" and want.kind == "f" and bool(np.isin(array, (0, 1)).all())))
    if kind == "double" and got.kind in "iu":
        safe = True  # JSON integers in a double column: MLflow's scoring server reads them so
    if not safe:
        raise _wrong_type(column, got)
    return array.astype(want)


def _wrong(column: ColumnSpec, value: Any) -> InvalidInput:
    return InvalidInput(f"column {column.name!r} is {column.type} in the model's signature; "
                        f"got {codecs.json_kind(value)}")


def _wrong_type(column: ColumnSpec, got: np.dtype[Any]) -> InvalidInput:
    return InvalidInput(f"column {column.name!r} is {column.type} in the model's signature; "
                        f"got {got}, which does not cast safely to it")


def signed(predictor: Predictor, model: MLflowModel) -> Predictor:
    """*predictor* described and checked by *model*'s signature; as it is without one, or
    when it checks the signature itself (``mlflow.pyfunc`` does)."""
    columns = signature_inputs(model)
    if columns is None or getattr(predictor, "enforces_signature", False):
        return predictor
    return SignedPredictor(predictor, columns, signature_params(model))

