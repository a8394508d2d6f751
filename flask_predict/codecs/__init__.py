"""JSON <-> numpy: the only code that turns request bodies into arrays and arrays into
response bodies. One module per concern:

* :mod:`.parsing` - JSON text to Python values (orjson, simplejson, simdjson accelerators),
  nesting depth; :mod:`.lines` - JSON lines of numbers to one matrix (a batch job's chunk);
* :mod:`.printing` - Python values and arrays to JSON text; :mod:`.tfnumbers` - TF Serving's
  number writer (its own subpackage: only the TF Serving protocol prints that way);
* :mod:`.preview` - bounded previews of values for error messages;
* :mod:`.dtypes` - the one datatype table and integer range check;
* :mod:`.arrays` - JSON values <-> arrays by V2 datatype, ``{"b64": ...}``;
* :mod:`.rows` - row and columnar instances -> named tensors (TF Serving's rules and texts);
  :mod:`.json_tensor` - one JSON value -> its tensor, by the same rules; :mod:`.tables` -
  rows of numbers -> one float64 matrix, handed on as named columns (``ColumnMatrix``);
* :mod:`.predictions` - outputs -> rows of predictions; the instances door of tensor
  predictors (tensors -> instances, predictions -> tensors);
* :mod:`.examples` - tf.Example features -> feature rows, or a table's columns;
* :mod:`.explanations` - an explanation's attributions -> one JSON object per row.

The face below is what protocols, the service and plugins use, as ``codecs.<name>``; a
module's other names are its own, for the code that needs exactly that piece.
"""

from __future__ import annotations

from .arrays import (as_bytes, b64_decode, check_shape, has_booleans, json_value, past_range,
                     to_array)
from .dtypes import (FLOAT32, FLOAT64, FLOATS, INT64_MAX, INT64_MIN, NUMPY_TO_V2, V2_TO_NUMPY,
                     datatype_of)
from .examples import examples_to_columns, examples_to_rows
from .explanations import explanation_rows
from .lines import number_lines
from .parsing import loads, loads_v2_infer, number_matrix
from .predictions import (predictions_to_outputs, predictions_to_tensor, tensors_to_instances,
                          tensors_to_rows)
from .preview import json_kind, preview
from .printing import dumps, dumps_strict
from .rows import columns_to_tensors, matrix_to_tensors, rows_to_tensors
from .scanning import check_depth
from .tables import ColumnMatrix, matrix_of, named_matrix, named_rows, number_rows, number_table
from .tfnumbers import dumps_tfserving

__all__ = [
    # JSON in
    "check_depth", "loads", "loads_v2_infer", "number_lines", "number_matrix",
    # JSON out
    "dumps", "dumps_strict", "dumps_tfserving", "explanation_rows", "json_kind", "preview",
    # values <-> arrays, and their datatypes
    "FLOAT32", "FLOAT64", "FLOATS", "INT64_MAX", "INT64_MIN", "NUMPY_TO_V2", "V2_TO_NUMPY",
    "as_bytes", "b64_decode", "check_shape", "datatype_of", "has_booleans", "json_value",
    "past_range", "to_array",
    # instances and rows <-> named tensors
    "ColumnMatrix", "columns_to_tensors", "examples_to_columns", "examples_to_rows",
    "matrix_of", "matrix_to_tensors", "named_matrix", "named_rows", "number_rows",
    "number_table",
    "predictions_to_outputs", "predictions_to_tensor", "rows_to_tensors", "tensors_to_instances",
    "tensors_to_rows",
]
