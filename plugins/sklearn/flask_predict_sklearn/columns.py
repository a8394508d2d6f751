"""What a fitted scikit-learn model tells of the data it was fitted on: the columns of a
DataFrame, their kinds and categories, or a 1-D array of text.

scikit-learn keeps a DataFrame's column names (``feature_names_in_``) but not their dtypes,
so the kind of each column is read from the step that first reads it:

* a ``ColumnTransformer`` (the model, or a Pipeline's first step): each of its fitted
  transformers, for the columns it was given; ``"drop"``: any value (the model never reads
  it), ``"passthrough"``: numbers;
* an encoder with ``categories_`` (``OneHotEncoder``, ``OrdinalEncoder``,
  ``TargetEncoder``): text where its categories are text, numbers otherwise, with those
  categories; a value it does not know is refused (400) where its ``handle_unknown`` is
  ``"error"``, as the encoder itself would refuse it, and otherwise reaches it (the
  encoder reads it as its ``handle_unknown`` says: all zeros, the infrequent category, the
  encoded value, the target mean);
* a text vectorizer (``CountVectorizer``, ``TfidfVectorizer``, ``HashingVectorizer``): text;
* a Pipeline: its first step, after any ``SimpleImputer`` (text where the imputer was fitted
  on text; a missing value passes an encoder the imputer fills it for);
* ``HistGradientBoosting*`` with categorical features: those columns are pandas
  categories with the model's categories (an unknown one is missing, as the model reads it);
* anything else: numbers.

A model whose first step takes text (a text vectorizer, a ``FeatureUnion`` of them, through
nested Pipelines) takes one input of text, ``inputs``. A vectorizer that reads files or
file objects (``input="filename"`` or ``"file"``) would open what a request names: such a
model is refused when it loads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from flask_predict.plugin import ANY, NUMBER, TEXT, Column, is_missing

TEXT_INPUT = "inputs"
"""The one input of a model that takes text."""


@dataclass(frozen=True)
class Layout:
    """The inputs a model fitted on a DataFrame (or on text) takes."""

    columns: tuple[Column, ...]
    text: bool = False
    """The model takes a 1-D array of text (one column, :data:`TEXT_INPUT`)."""
    pandas_categories: frozenset[str] = frozenset()
    """Columns the model was fitted on as pandas categories."""


def layout(model: Any) -> Layout | None:
    """The inputs of *model*; ``None`` for a model fitted on a matrix of numbers."""
    if takes_text(model):
        return Layout((Column(TEXT_INPUT, TEXT, "BYTES", missing_ok=False),), text=True)
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return None
    names = [str(name) for name in names]
    entry = _first_step(model)
    read = _read_by(entry, names)
    categorical: frozenset[str] = frozenset()
    if not read and hasattr(entry, "is_categorical_"):  # HistGradientBoosting*
        read = _read_by(getattr(entry, "_preprocessor", None), names)
        categorical = frozenset(name for name, column in read.items() if column.categories)
    columns = tuple(read.get(name, Column(name)) for name in names)
    return Layout(columns, pandas_categories=categorical)


def takes_text(model: Any) -> bool:
    """The first step of *model* reads text: a text vectorizer or a FeatureUnion of them."""
    from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
    from sklearn.pipeline import FeatureUnion

    step = _first_step(model)
    if isinstance(step, FeatureUnion):
        parts = [part for _, part in step.transformer_list if part not in (None, "drop")]
        return bool(parts) and all(takes_text(part) for part in parts)
    return isinstance(step, (CountVectorizer, HashingVectorizer)) and reads_text(step)


def reads_text(vectorizer: Any) -> bool:
    """True for a text vectorizer that reads the text it is given; ``TypeError`` for one
    that would open the files a request names."""
    source = getattr(vectorizer, "input", "content")
    if source != "content":
        raise TypeError(f"{type(vectorizer).__name__}(input={source!r}) would read the files "
                        "a request names; only input='content' is served")
    return True


def _first_step(model: Any) -> Any:
    from sklearn.pipeline import Pipeline

    while isinstance(model, Pipeline):
        steps = _steps(model)
        if not steps:
            break
        model = steps[0]
    return model


def _steps(pipeline: Any) -> list[Any]:
    """A Pipeline's steps that do something (not ``None`` or ``"passthrough"``)."""
    return [step for _, step in pipeline.steps if step not in (None, "passthrough")]


def _read_by(entry: Any, names: list[str]) -> dict[str, Column]:
    """Column name -> its column, for the columns *entry* (a model's first step) tells."""
    from sklearn.compose import ColumnTransformer

    if isinstance(entry, ColumnTransformer):
        read = {}
        for _, transformer, selected in entry.transformers_:
            for index, name in enumerate(_selected(selected, names)):
                read[name] = _column(transformer, index, name)
        return read
    if hasattr(entry, "categories_"):
        return {name: _column(entry, index, name) for index, name in enumerate(names)}
    return {}


def _selected(selected: Any, names: list[str]) -> list[str]:
    """A ColumnTransformer's fitted column selection as column names."""
    if isinstance(selected, str):
        return [selected]
    if isinstance(selected, (int, np.integer)):
        return [names[int(selected)]]
    if isinstance(selected, slice):
        return names[selected] if not isinstance(selected.start, str) else []
    chosen = np.asarray(selected)
    if chosen.dtype.kind == "b":
        return [name for name, keep in zip(names, chosen) if keep]
    if chosen.dtype.kind in "iu":
        return [names[int(index)] for index in chosen]
    return [str(name) for name in chosen]


def _column(transformer: Any, index: int, name: str, imputed: bool = False) -> Column:
    """The column *name*, the *index*-th one *transformer* reads."""
    from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline

    if isinstance(transformer, str):
        return Column(name, ANY, "BYTES") if transformer == "drop" else Column(name)
    if isinstance(transformer, Pipeline):
        text = False
        for step in _steps(transformer):
            if not isinstance(step, SimpleImputer):
                column = _column(step, index, name, imputed)
                return column if column.kind != NUMBER or not text else _as_text(column)
            text = text or _fitted_on_text(step)
            imputed = True
        return Column(name, TEXT, "BYTES") if text else Column(name)
    if isinstance(transformer, (CountVectorizer, HashingVectorizer)) and reads_text(transformer):
        return Column(name, TEXT, "BYTES", missing_ok=imputed)  # it cannot read None
    if isinstance(transformer, SimpleImputer):
        return Column(name, TEXT, "BYTES") if _fitted_on_text(transformer) else Column(name)
    categories = getattr(transformer, "categories_", None)
    if isinstance(categories, list) and index < len(categories):
        return _categorical(name, np.asarray(categories[index]),
                            getattr(transformer, "handle_unknown", None) == "error", imputed)
    return Column(name)


def _categorical(name: str, known: Any, strict: bool, imputed: bool) -> Column:
    values = known.tolist()
    present = [value for value in values if not is_missing(value)]
    text = known.dtype.kind in "OSU"
    return Column(name, TEXT if text else NUMBER, "BYTES" if text else "FP64",
                  categories={value: code for code, value in enumerate(present)},
                  strict=strict, missing_ok=imputed or len(present) < len(values))


def _as_text(column: Column) -> Column:
    return replace(column, kind=TEXT, datatype="BYTES")


def _fitted_on_text(imputer: Any) -> bool:
    statistics = getattr(imputer, "statistics_", None)
    return isinstance(statistics, np.ndarray) and statistics.dtype.kind in "OSU"


