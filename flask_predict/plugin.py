"""The plugin face: everything a predictor plugin imports from flask-predict, in one module.

A framework plugin (``plugins/<framework>/``, or a third party's) imports only this module,
so the folders behind it can move without breaking one (docs/plugins.md). It imports no Flask
and no framework:

* the contract: :class:`Predictor`, :class:`Manifest` (what the gunicorn master reads without
  the framework) and :func:`lazy_attributes` (a package ``__getattr__`` that imports the
  predictor module on first use);
* the types and errors a predictor answers with;
* the tabular helpers (named columns, a matrix of features, refused values);
* array helpers (dtype tables, shape checks, rows back to instances);
* explanations (``Explanation``, feature contributions);
* the process's threads and GPUs, and the deadline of a native call;
* a model's files on disk (artifacts, pickles and the frameworks that wrote them);
* MLflow model folders: the ``MLmodel`` file read, a flavor's serialized model loaded, and a
  signature's inputs, params and tensor specs.
"""

from __future__ import annotations

from .codecs import (FLOATS, NUMPY_TO_V2, V2_TO_NUMPY, check_shape, past_range,
                     predictions_to_outputs, tensors_to_instances)
from .errors import (ConfigError, DeadlineExceeded, FailedPrecondition, InvalidInput,
                     PredictError, UnreadableModel, one_line)
from .explanation import Explanation, cannot_explain, class_labels, from_contributions
from .models.mlmodel import PYFUNC_PLUGIN, MLflowModel, load_serialized, read_mlmodel
from .models.plugins import Manifest, lazy_attributes
from .models.signed import signature_inputs, signature_outputs, signature_params, tensor_spec
from .predictor import Predictor
from .runtime.deadline import native as native_call
from .runtime.resources import detected_gpus, process_threads
from .storage.artifacts import (PICKLED_FRAMEWORKS, UNPICKLING_ERRORS, empty, pickled_module,
                                unreadable_pickle)
from .tabular import (ANY, NUMBER, TEXT, Column, code_matrix, column_matrix, feature_rows,
                      is_missing, known_categories, number_columns, read_columns,
                      refused_feature, refused_number, single_input, tabular_signature)
from .types import (DEFAULT_SIGNATURE, Classification, Example, InferenceRequest,
                    ModelMetadata, Signature, Tensor, TensorSpec)

__all__ = [
    # the contract
    "Manifest", "Predictor", "lazy_attributes",
    # types
    "Classification", "DEFAULT_SIGNATURE", "Example", "InferenceRequest", "ModelMetadata",
    "Signature", "Tensor", "TensorSpec",
    # errors
    "ConfigError", "DeadlineExceeded", "FailedPrecondition", "InvalidInput", "PredictError",
    "UnreadableModel", "one_line",
    # tabular helpers
    "ANY", "NUMBER", "TEXT", "Column", "code_matrix", "column_matrix", "feature_rows",
    "is_missing", "known_categories", "number_columns", "read_columns", "refused_feature",
    "refused_number", "single_input", "tabular_signature",
    # arrays
    "FLOATS", "NUMPY_TO_V2", "V2_TO_NUMPY", "check_shape", "past_range", "tensors_to_instances",
    "predictions_to_outputs",
    # explanations
    "Explanation", "cannot_explain", "class_labels", "from_contributions",
    # threads, GPUs and deadlines
    "detected_gpus", "native_call", "process_threads",
    # a model's files
    "PICKLED_FRAMEWORKS", "UNPICKLING_ERRORS", "empty", "pickled_module", "unreadable_pickle",
    # MLflow model folders
    "MLflowModel", "PYFUNC_PLUGIN", "load_serialized", "read_mlmodel", "signature_inputs",
    "signature_outputs",
    "signature_params", "tensor_spec",
]
