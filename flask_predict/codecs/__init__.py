"""JSON <-> numpy: the only code that turns request bodies into arrays and arrays into
response bodies. One module per concern:

* :mod:`.parsing` - JSON text to Python values (orjson, simplejson, simdjson accelerators),
  nesting depth;
* :mod:`.printing` - Python values and arrays to JSON text, TF Serving's number writer,
  bounded previews of values for error messages;
* :mod:`.dtypes` - the one datatype table and integer range check;
* :mod:`.arrays` - JSON values <-> arrays by V2 datatype, ``{"b64": ...}``;
* :mod:`.rows` - row and columnar instances <-> named tensors (TF Serving's rules and texts);
* :mod:`.examples` - tf.Example features -> feature rows.

Callers use ``from flask_predict import codecs`` and ``codecs.<name>``.
"""

from __future__ import annotations

from .arrays import (b64_bytes, b64_decode, check_shape, dense_shape, has_booleans, is_b64,
                     json_value, object_array, past_range, to_array)
from .cells import GRID_FROM, block, lines_text
from .dtypes import (FLOAT32, FLOAT64, FLOAT_DATATYPES, FLOATS, INT64_MAX, INT64_MIN,
                     NUMPY_TO_V2, TF_NAMES, V2_TO_NUMPY, datatype_of, int_range, numpy_dtype,
                     out_of_range)
from .examples import examples_to_rows
from .parsing import (SIMDJSON_SAFE_BYTES, check_depth, loads, loads_v2_infer, nesting_depth,
                      number_matrix)
from .printing import (Raw, array_text, b64_value, dumps, dumps_strict, dumps_tfserving,
                       element_texts, fill_rows, float_texts, preview, row_template,
                       row_texts, shortest_texts)
from .rows import (columns_to_tensors, is_named, json_type, matrix_to_tensors,
                   predictions_to_outputs, predictions_to_tensor, rows_to_tensors,
                   tensor_from_json, tensors_to_instances, tensors_to_rows)

__all__ = [
    "FLOAT32", "FLOAT64", "FLOAT_DATATYPES", "FLOATS", "GRID_FROM", "INT64_MAX", "INT64_MIN",
    "NUMPY_TO_V2", "SIMDJSON_SAFE_BYTES", "TF_NAMES", "V2_TO_NUMPY", "array_text", "b64_bytes",
    "b64_decode", "b64_value", "block",
    "check_depth", "check_shape", "columns_to_tensors", "datatype_of", "dense_shape", "dumps",
    "dumps_strict", "dumps_tfserving", "element_texts", "examples_to_rows", "fill_rows",
    "float_texts",
    "has_booleans", "int_range", "is_b64", "is_named", "json_type", "json_value", "lines_text",
    "loads", "loads_v2_infer", "matrix_to_tensors", "nesting_depth", "number_matrix",
    "numpy_dtype", "object_array", "out_of_range", "past_range", "predictions_to_outputs",
    "predictions_to_tensor", "preview", "Raw", "row_template", "row_texts", "rows_to_tensors",
    "shortest_texts", "tensor_from_json", "tensors_to_instances", "tensors_to_rows", "to_array",
]
