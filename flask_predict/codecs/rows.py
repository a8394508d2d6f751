"""Row and columnar JSON -> named tensors, with TF Serving's rules and texts.

One decoder for every protocol that sends rows of instances (TF Serving's ``instances`` and
``inputs``, AI Platform's ``instances``, the instances door of tensor predictors): it follows
``json_tensor.cc`` (``FillTensorMapFromInstancesList``, ``FillTensorMapFromInputsMap``); each
value becomes its tensor by :mod:`.json_tensor` (``FillTensorProto``), and errors carry TF
Serving's wording.

A tabular signature (the columns of a table, ``Signature.tabular``) also takes plain rows
of one value per column, by position, where TF Serving wants objects naming the inputs.

Where flask-predict differs from TF Serving, on purpose: ``null`` in a float input is NaN
(a missing value for XGBoost), and integers out of range for an 8- or 16-bit input are
refused instead of wrapped.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import InvalidInput, Unimplemented
from ..types import Signature, Tensor, TensorSpec
from .arrays import is_b64
from .dtypes import FLOAT64, V2_TO_NUMPY
from .json_tensor import LOSSLESS, fast_tensor, lossless, shape_text, tensor_from_json
from .preview import preview


def is_named(value: Any) -> bool:
    """An instance object naming inputs (not a ``{"b64": ...}`` value)."""
    return isinstance(value, dict) and not is_b64(value)


# --- requests -------------------------------------------------------------------------------

def rows_to_tensors(instances: Any, signature: Signature) -> dict[str, Tensor]:
    """Row format: one value per instance for a single input, or one object per instance
    naming every input (required when there are several)."""
    if not isinstance(instances, list):
        raise InvalidInput(f"JSON Value: {preview(instances)} Expecting 'instances' to be an "
                           "list/array")
    if not instances:
        raise InvalidInput("JSON Value: [] No values in 'instances' array")
    specs = {spec.name: spec for spec in signature.inputs}
    if not isinstance(instances[0], dict) and len(specs) > 1:
        if signature.tabular:
            return _positional_rows(instances, specs, "instances")
        raise InvalidInput("instances is a plain list, but expecting list of objects as "
                           "multiple input tensors required as per tensorinfo_map")
    if is_named(instances[0]):
        return _named_rows(instances, specs, signature.tabular)
    spec = signature.inputs[0]
    fast = fast_tensor(instances, spec)
    if fast is not None:
        return {spec.name: fast}
    for index, item in enumerate(instances):
        if is_named(item):
            raise InvalidInput(f"Expecting value/list but got object at item {index} of "
                               "input list")
    return {spec.name: _batch(instances, spec, lambda index: f"{index}")}


def _named_rows(instances: list[Any], specs: Mapping[str, TensorSpec],
                tabular: bool) -> dict[str, Tensor]:
    columns: dict[str, list[Any]] = {name: [] for name in specs}
    for index, item in enumerate(instances):
        if not is_named(item):
            raise InvalidInput(f"Expecting object but got list at item {index} of input list")
        for name, value in item.items():
            if name not in specs:
                shown = name if len(name) <= 200 else name[:200] + "..."  # cut, not whole
                raise InvalidInput(f"Failed to process element: {index} key: {shown} of "
                                   "'instances' list. Error: INVALID_ARGUMENT: JSON object: "
                                   f"does not have named input: {shown}")
            columns[name].append(value)
        if item.keys() != specs.keys():
            absent = ", ".join(repr(name) for name in specs if name not in item)
            raise InvalidInput(f"Failed to process element: {index} of 'instances' list. "
                               f"JSON object: {preview(item)} keys must be equal to: "
                               f"{','.join(sorted(specs))} (missing "
                               f"{'column' if tabular else 'input'}(s): {absent})")
    return _column_tensors(columns, specs, "instances", tabular)


def _positional_rows(rows: list[Any], specs: Mapping[str, TensorSpec],
                     key: str) -> dict[str, Tensor]:
    """Plain rows of a tabular signature (``Signature.tabular``): each row one value per
    input, in the signature's order."""
    columns: dict[str, list[Any]] = {name: [] for name in specs}
    width = len(specs)
    for index, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise InvalidInput(f"Failed to process element: {index} of '{key}' list. "
                               f"Expecting a row of {width} values, one per column of the "
                               f"model ({','.join(specs)}), got: {preview(row)}")
        for values, value in zip(columns.values(), row):
            values.append(value)
    return _column_tensors(columns, specs, key, True)


def _column_tensors(columns: Mapping[str, list[Any]], specs: Mapping[str, TensorSpec],
                    key: str, tabular: bool) -> dict[str, Tensor]:
    """Each input's values, one per instance, stacked into its tensor."""
    tensors = {}
    for name, values in columns.items():
        spec = specs[name]
        if _missing_text(values, spec, tabular):
            tensors[name] = _text_with_missing(values, spec, key, name)
            continue
        fast = fast_tensor(values, spec)
        tensors[name] = fast if fast is not None else _batch(
            values, spec, lambda index, name=name: f"{index} key: {name}", key)
    return tensors


def _missing_text(values: Any, spec: TensorSpec, tabular: bool) -> bool:
    """A list of a tabular signature's text column that holds ``null``."""
    return tabular and spec.datatype == "BYTES" and isinstance(values, list) and None in values


def _text_with_missing(values: list[Any], spec: TensorSpec, key: str, name: str) -> Tensor:
    """A text column of a tabular signature holding ``null``: a missing value (``None``),
    where TF Serving refuses null for a string."""
    present = [index for index, value in enumerate(values) if value is not None]
    column = np.full(len(values), None, dtype=object)
    if present:
        texts = _batch([values[index] for index in present], spec,
                       lambda index: f"{present[index]} key: {name}", key)
        if texts.ndim != 1:
            raise InvalidInput(f"Failed to process element: {present[0]} key: {name} of "
                               f"'{key}' list. Error: INVALID_ARGUMENT: lists among nulls: "
                               "a row holds one value of this column")
        column[present] = texts
    return column


def _batch(items: list[Any], spec: TensorSpec, where: Any, key: str = "instances") -> Tensor:
    """The instances of one input stacked, TF Serving's way: each converted on its own, all
    of the same size and shape (``AddInstanceItem``)."""
    parts: list[Tensor] = []
    for index, item in enumerate(items):
        try:
            part = tensor_from_json(item, spec)
        except (InvalidInput, Unimplemented) as exc:
            status = "UNIMPLEMENTED" if isinstance(exc, Unimplemented) else "INVALID_ARGUMENT"
            raise InvalidInput(f"Failed to process element: {where(index)} of '{key}' "
                               f"list. Error: {status}: {exc.message}")
        if parts and part.shape != parts[0].shape:
            first = parts[0]
            detail = (f"Expecting tensor size: {first.size} but got: {part.size}"
                      if part.size != first.size else
                      f"Expecting shape {shape_text(first.shape)} but got: "
                      f"{shape_text(part.shape)}")
            raise InvalidInput(f"Failed to process element: {where(index)} of '{key}' "
                               f"list. Error: INVALID_ARGUMENT: {detail}")
        parts.append(part)
    return np.stack(parts)


def columns_to_tensors(inputs: Any, signature: Signature) -> dict[str, Tensor]:
    """Columnar format: the only input's value, or an object naming every input (extra keys
    are ignored, as in TF Serving; a table's unknown columns are refused, and its errors
    name the column)."""
    specs = {spec.name: spec for spec in signature.inputs}
    if is_named(inputs):
        for name in specs:
            if name not in inputs:
                raise InvalidInput(f"Missing named input: {name} in 'inputs' object.")
        if not signature.tabular:
            return {name: tensor_from_json(inputs[name], spec) for name, spec in specs.items()}
        return _table_columns(inputs, specs)
    if len(specs) != 1:
        if signature.tabular and isinstance(inputs, list) and inputs:
            return _positional_rows(inputs, specs, "inputs")
        raise InvalidInput("inputs is a plain value/list, but expecting an object as multiple "
                           "input tensors required as per tensorinfo_map")
    (spec,) = specs.values()
    return {spec.name: tensor_from_json(inputs, spec)}


def _table_columns(inputs: Mapping[str, Any], specs: Mapping[str, TensorSpec]
                   ) -> dict[str, Tensor]:
    """The columns of a tabular signature from an object naming each (``null`` in text is
    a missing value); an error names its column."""
    unknown = [name for name in inputs if name not in specs]
    if unknown:
        raise InvalidInput(f"unknown input(s) {unknown} in 'inputs' object; the model's "
                           f"columns are {list(specs)}")
    tensors = {}
    for name, spec in specs.items():
        values = inputs[name]
        try:
            tensors[name] = (_text_with_missing(values, spec, "inputs", name)
                             if _missing_text(values, spec, True)
                             else tensor_from_json(values, spec))
        except InvalidInput as exc:
            raise InvalidInput(f"column {name!r}: {exc.message}")
    return tensors


def matrix_to_tensors(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """What :func:`rows_to_tensors` makes of the rows of a ``number_matrix``, or ``None``
    unless *signature* has one FP32/FP64 input or FP32/FP64 columns (a tabular one): other
    dtypes need the JSON values.

    An FP64 input takes the matrix as it is: ``number_matrix`` answers only float64 values
    under 2**53, all lossless there."""
    if len(signature.inputs) != 1:
        return _matrix_columns(matrix, signature)
    spec = signature.inputs[0]
    if spec.datatype == "FP64" and matrix.dtype == FLOAT64:
        return {spec.name: matrix}
    if spec.datatype not in LOSSLESS or not lossless(matrix, spec.datatype):
        return None
    return {spec.name: matrix.astype(V2_TO_NUMPY[spec.datatype], copy=False)}


def _matrix_columns(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """The columns of a ``number_matrix`` of rows for a tabular signature of FP32/FP64
    columns (``Signature.tabular``), else ``None``."""
    specs = signature.inputs
    if not signature.tabular or matrix.ndim != 2 or matrix.shape[1] != len(specs):
        return None
    columns = {}
    for index, spec in enumerate(specs):
        column = matrix[:, index]
        if spec.datatype not in LOSSLESS or not lossless(column, spec.datatype):
            return None
        columns[spec.name] = column.astype(V2_TO_NUMPY[spec.datatype], copy=False)
    return columns
