"""Named, typed columns: the inputs of a model fitted on a table.

A model that knows its columns (scikit-learn's ``feature_names_in_``, XGBoost's
``feature_names``) takes one input per column, in its order, each holding one value per
row: numbers, text, or categories the model knows. A plugin describes them as
:class:`Column` values and declares them as its signature's inputs
(:func:`tabular_signature`); :func:`read_columns` checks a request's inputs against them
and answers one plain 1-D array per column, from which the plugin builds what its framework
takes (a pandas DataFrame, or :func:`code_matrix`: a matrix of numbers and category
codes). Nothing here imports a framework.

Every problem is the client's (400, naming the column, in one line): a missing or unknown
column, a column of another length or shape, text where numbers belong or numbers where text
does, and, where the model refuses them itself, a category it does not know and a missing or
infinite number (:func:`refused_number`, from the framework's refusal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from . import codecs
from .errors import FailedPrecondition, InvalidInput
from .types import Signature, Tensor, TensorSpec

NUMBER, TEXT, ANY = "number", "text", "any"
"""Column kinds: numbers (float64, NaN where missing), text (``str``, ``None`` where
missing), or any value (a column the model never reads: numbers or text as sent)."""

MAX_NAMES_SHOWN = 20
"""Column names and categories an error message lists before it stops."""


@dataclass(frozen=True)
class Column:
    """One column the model was fitted with."""

    name: str
    kind: str = NUMBER
    """:data:`NUMBER`, :data:`TEXT` or :data:`ANY`."""
    datatype: str = "FP64"
    """What metadata shows: the model's float type for numbers, ``BYTES`` otherwise."""
    categories: Mapping[Any, int] | None = None
    """The values the model knows, each with its code (its place in the model's list, in
    that order); ``None`` when any value of the kind is taken."""
    strict: bool = False
    """A value not among :attr:`categories` is refused (400), as the model itself would
    refuse it; otherwise it reaches the model, which reads it as it documents (often as a
    missing value)."""
    missing_ok: bool = True
    """A missing value (null, NaN) is taken: it is a category of the model, or is imputed
    before the model reads it, or the model reads it as missing. ``False`` refuses it (400)
    in a strict column and in a text column the model cannot read missing (a text
    vectorizer)."""

    def spec(self) -> TensorSpec:
        """The column as a signature input: one value per row."""
        return TensorSpec(self.name, self.datatype, (-1,))


def is_missing(value: Any) -> bool:
    """A missing value as a column holds it: ``None`` (JSON null) or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def tabular_signature(columns: Sequence[Column], outputs: Sequence[TensorSpec]) -> Signature:
    """A signature taking *columns*, one input each, in order."""
    return Signature(inputs=tuple(column.spec() for column in columns),
                     outputs=tuple(outputs), tabular=True)


def known_categories(columns: Sequence[Column]) -> dict[str, list[Any]]:
    """Each column's known categories, in the model's order (what metadata shows)."""
    return {column.name: list(column.categories) for column in columns if column.categories}


def read_columns(inputs: Mapping[str, Tensor], columns: Sequence[Column]) -> dict[str, Tensor]:
    """The request's *inputs* as one checked 1-D array per column, in the columns' order.

    Each input holds one value per row (shape ``[N]`` or ``[N, 1]``). A lone input that
    names no column is the rows themselves: a ``[N, columns]`` matrix, split by position
    (or, for a one-column model, that column under any name).
    """
    names = [column.name for column in columns]
    if len(inputs) == 1:
        ((name, array),) = inputs.items()
        if name not in names:
            inputs = _lone_input(name, array, names)
    unknown = [name for name in inputs if name not in names]
    if unknown:
        raise InvalidInput(f"unknown input(s) {_listed(unknown)}; the model's columns are "
                           f"{_listed(names)}")
    missing = [name for name in names if name not in inputs]
    if missing:
        raise InvalidInput(f"missing column(s) {_listed(missing)}; the model's columns are "
                           f"{_listed(names)}")
    read: dict[str, Tensor] = {}
    for column in columns:
        values = _one_per_row(inputs[column.name], column.name)
        if read:
            first = next(iter(read))
            if len(values) != len(read[first]):
                raise InvalidInput(f"columns hold different numbers of rows: {first!r} "
                                   f"{len(read[first])}, {column.name!r} {len(values)}")
        values = _numbers(values, column) if column.kind == NUMBER else _texts(values, column)
        if column.strict and column.categories is not None:
            _check_categories(values, column)
        read[column.name] = values
    return read


def number_columns(columns: Sequence[Column]) -> tuple[str, ...] | None:
    """The names of *columns* where every one takes plain numbers (no categories): a model
    fitted on them can take one matrix of them (:func:`column_matrix`); else ``None``."""
    if not columns or any(c.kind != NUMBER or c.categories is not None for c in columns):
        return None
    return tuple(column.name for column in columns)


def column_matrix(inputs: Mapping[str, Tensor], columns: Sequence[Column]
                  ) -> tuple[Mapping[str, Tensor], Tensor]:
    """For *columns* that all take numbers (:func:`number_columns`): the request's columns
    checked as :func:`read_columns` checks them, and the float64 matrix of them, one column
    each in the columns' order (in either memory order).

    An unchanged ``codecs.ColumnMatrix`` of exactly those columns (one table of numbers,
    decoded at once) is taken as it is: its columns are float64 and one per row already."""
    names = [column.name for column in columns]
    matrix = codecs.matrix_of(inputs, names)
    if matrix is not None:
        return inputs, matrix
    read = read_columns(inputs, columns)
    return read, np.array(list(read.values())).T


def code_matrix(columns: Mapping[str, Tensor], layout: Sequence[Column],
                dtype: type[np.floating[Any]]) -> Tensor:
    """The C-contiguous matrix of *columns* (from :func:`read_columns`) for a tree model
    that reads categories as codes: numbers as they are (past *dtype*'s range: infinite),
    a category as its code, NaN where missing or not among the column's categories."""
    rows = len(next(iter(columns.values())))
    matrix = np.empty((rows, len(layout)), dtype=dtype)
    for index, column in enumerate(layout):
        values = columns[column.name]
        if column.categories is None:
            with np.errstate(over="ignore"):
                matrix[:, index] = values
        else:
            codes = column.categories
            matrix[:, index] = [math.nan if value is None else codes.get(value, math.nan)
                                for value in values.tolist()]
    return matrix


def single_input(inputs: Mapping[str, Tensor]) -> Tensor:
    """The one input of a model fitted on a matrix: a 2-D batch of rows, any values."""
    if len(inputs) != 1:
        raise InvalidInput(f"the model takes one input (a batch of feature rows), got "
                           f"{len(inputs)}: {sorted(inputs)}")
    (rows,) = inputs.values()
    if rows.ndim == 1:
        raise InvalidInput("expected a batch of feature rows (a 2-D array), got a 1-D array")
    return rows


def feature_rows(inputs: Mapping[str, Tensor], spec: TensorSpec) -> Tensor:
    """The one input of a model fitted on a matrix of numbers: a batch of feature rows,
    checked against *spec* (``[-1, n_features]``)."""
    rows = single_input(inputs)
    codecs.check_shape(rows, spec)
    if rows.dtype.kind not in "iufb":
        raise InvalidInput(f"expected numbers, got {codecs.datatype_of(rows)}")
    return rows


def refused_number(columns: Mapping[str, Tensor], *, missing: bool,
                   infinite: bool) -> FailedPrecondition | None:
    """The 400 naming the first of *columns* (checked 1-D arrays, as :func:`read_columns`
    answers) that holds a number the model refused: a missing one (null, NaN) where
    *missing*, an infinite one where *infinite*; ``None`` where none does. Well formed, but
    the model cannot take it: ``FAILED_PRECONDITION``, as Vertex AI's containers answer."""
    return _refused({f"column {name!r}": values for name, values in columns.items()},
                    missing, infinite)


def refused_feature(features: Tensor, *, missing: bool,
                    infinite: bool) -> FailedPrecondition | None:
    """:func:`refused_number` for a model fitted on a matrix: rows of features, each
    named by its place (``feature 2``)."""
    if features.ndim != 2 or not _holds_refused(features, missing, infinite):
        return None  # the usual answer, from one pass over the whole matrix
    return _refused({f"feature {index}": features[:, index]
                     for index in range(features.shape[1])}, missing, infinite)


def _holds_refused(values: Tensor, missing: bool, infinite: bool) -> bool:
    """Whether *values* hold a number refused (a NaN where *missing*, an infinity where
    *infinite*): one pass, whatever is refused."""
    if values.dtype.kind != "f" or not (missing or infinite):
        return False
    if missing and infinite:
        return not bool(np.isfinite(values).all())
    return bool((np.isnan(values) if missing else np.isinf(values)).any())


def _refused(columns: Mapping[str, Tensor], missing: bool,
             infinite: bool) -> FailedPrecondition | None:
    for label, values in columns.items():
        if not _holds_refused(values, missing, infinite):
            continue
        if missing and np.isnan(values).any():
            row = int(np.flatnonzero(np.isnan(values))[0])
            return FailedPrecondition(f"{label}: value {row} is missing (null or NaN); the "
                                      "model takes no missing value there")
        if infinite and np.isinf(values).any():
            row = int(np.flatnonzero(np.isinf(values))[0])
            return FailedPrecondition(f"{label}: value {row} is infinite (or past the model's "
                                      "float range); the model takes no infinite value")
    return None


def _lone_input(name: str, array: Tensor, names: list[str]) -> dict[str, Tensor]:
    if len(names) == 1:
        return {names[0]: array}
    if array.ndim == 2 and array.shape[1] == len(names):
        return {column: array[:, index] for index, column in enumerate(names)}
    raise InvalidInput(f"the model takes {len(names)} columns {_listed(names)}: send one "
                       f"input per column, or rows of {len(names)} values; got input "
                       f"{name!r} of shape {list(array.shape)}")


def _one_per_row(array: Tensor, name: str) -> Tensor:
    if array.ndim == 1:
        return array
    if array.ndim == 2 and array.shape[1] == 1:
        return array[:, 0]
    raise InvalidInput(f"column {name!r}: expected one value per row (shape [N] or [N, 1]), "
                       f"got shape {list(array.shape)}")


def _numbers(values: Tensor, column: Column) -> Tensor:
    """float64 values, NaN where missing."""
    kind = values.dtype.kind
    if kind in "iuf":
        return values.astype(np.float64, copy=False)
    if kind == "O":
        items = values.tolist()
        other = [item for item in items if not (item is None or _is_number(item))]
        if not other:
            return np.array([math.nan if item is None else item for item in items],
                            dtype=np.float64)
        found = _kind_of(other[0])
    else:
        found = "booleans" if kind == "b" else "text" if kind in "SU" else codecs.datatype_of(
            values)
    raise InvalidInput(f"column {column.name!r}: expected numbers, got {found}")


def _is_number(item: Any) -> bool:
    return isinstance(item, (int, float)) and not isinstance(item, bool)


def _kind_of(item: Any) -> str:
    if isinstance(item, bool):
        return "booleans"
    if isinstance(item, (bytes, str)):
        return "text"
    return type(item).__name__


def _texts(values: Tensor, column: Column) -> Tensor:
    """An object array of ``str`` (``None`` where missing); numbers too in an ANY column."""
    if values.dtype.kind not in "OSU":
        if column.kind == ANY:
            return values
        raise InvalidInput(f"column {column.name!r}: expected text, got numbers")
    out = np.empty(len(values), dtype=object)
    for index, item in enumerate(values.tolist()):
        if isinstance(item, bytes):
            try:
                item = item.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"column {column.name!r}: value {index} is not UTF-8 text")
        elif isinstance(item, float) and math.isnan(item):
            item = None
        if item is None:
            if not (column.missing_ok or column.categories):  # categories say it their way
                raise InvalidInput(f"column {column.name!r}: value {index} is missing (null); "
                                   "the model reads text there and takes no missing value")
        elif not (isinstance(item, str) or column.kind == ANY):
            raise InvalidInput(f"column {column.name!r}: expected text, got "
                               f"{'numbers' if _is_number(item) else _kind_of(item)}")
        out[index] = item
    return out


def _check_categories(values: Tensor, column: Column) -> None:
    categories = column.categories
    assert categories is not None
    for value in values.tolist():
        if is_missing(value):
            if not column.missing_ok:
                raise InvalidInput(f"column {column.name!r}: a missing value (null or NaN) is "
                                   "not among the model's categories")
        elif value not in categories:
            raise InvalidInput(f"column {column.name!r}: unknown category "
                               f"{codecs.preview(value)}; the model knows "
                               f"{_listed(list(categories))}")


def _listed(items: Sequence[Any]) -> str:
    """*items* as a list, the first :data:`MAX_NAMES_SHOWN` of a longer one."""
    if len(items) <= MAX_NAMES_SHOWN:
        return repr(list(items))
    shown = ", ".join(repr(item) for item in items[:MAX_NAMES_SHOWN])
    return f"[{shown}, ... ({len(items)} in all)]"
