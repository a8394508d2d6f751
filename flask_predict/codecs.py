"""JSON <-> numpy: the one place that parses and prints request and response bodies.

Policy, decided once here:

* ``NaN``, ``Infinity`` and ``-Infinity`` tokens are accepted in requests and printed in
  responses (TF Serving's JSON rules). JSON ``null`` in a floating-point input is NaN, which
  XGBoost and other NaN-aware models read as *missing*.
* ``{"b64": "..."}`` carries binary values; a string value of a BYTES tensor is its UTF-8 text.
* Strings are never silently turned into numbers, and floats never into integers.

Parsing uses orjson (several times faster than the standard library on number-heavy bodies)
and falls back to simplejson for the non-standard tokens orjson refuses.
"""

from __future__ import annotations

import base64
import binascii
import math
import threading
from typing import Any, Mapping, Sequence

import numpy as np
import orjson
import simdjson
import simplejson

from .errors import InvalidInput
from .types import Signature, Tensor, TensorSpec

V2_TO_NUMPY: dict[str, np.dtype[Any]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}
"""Open Inference Protocol datatype -> numpy dtype: the one dtype table."""
try:  # bfloat16 exists in numpy only through ml_dtypes (installed with TensorFlow/JAX)
    import ml_dtypes

    V2_TO_NUMPY["BF16"] = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on what is installed
    pass

NUMPY_TO_V2: dict[np.dtype[Any], str] = {dtype: name for name, dtype in V2_TO_NUMPY.items()}


def datatype_of(array: Tensor) -> str:
    """The V2 datatype name of *array* (strings and bytes are ``BYTES``)."""
    if array.dtype.kind in "USO":
        return "BYTES"
    try:
        return NUMPY_TO_V2[array.dtype]
    except KeyError:
        raise InvalidInput(f"unsupported output dtype {array.dtype}")


# --- bodies ---------------------------------------------------------------------------------

def loads(body: bytes | str) -> Any:
    """Parse a JSON body; raise :class:`InvalidInput` with the parser's reason."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as fast_error:
        if "recursion" in str(fast_error):
            raise InvalidInput("JSON Parse error: nested too deeply")
        try:  # orjson refuses NaN/Infinity tokens and integers over 64 bits
            return simplejson.loads(body, allow_nan=True)
        except RecursionError:
            raise InvalidInput("JSON Parse error: nested too deeply")
        except (ValueError, TypeError) as exc:
            raise InvalidInput(f"JSON Parse error: {exc}")


def number_matrix(body: bytes, key: str) -> Tensor | None:
    """*body*'s only member *key* as a float64 matrix when it is a non-empty rectangular
    array of rows of plain JSON numbers; ``None`` for any other body.

    An accelerator for large numeric bodies: simdjson reads the numbers straight into one
    buffer, with no Python object per number (about ten times faster than :func:`loads`
    and :func:`to_array` on 10,000 rows). Whenever it answers, the answer equals
    ``to_array(loads(body)[key], "FP64", ...)``; anything it is not sure of (other keys,
    ``null``, booleans, nesting, ragged rows, integers from 2**53 on, bad JSON) is left to
    those, with their errors.
    """
    try:
        document = _parse_simdjson(body)
        if not isinstance(document, simdjson.Object) or list(document.keys()) != [key]:
            return None
        rows = document[key]
        if not isinstance(rows, simdjson.Array) or not len(rows):
            return None
        width = len(rows[0]) if isinstance(rows[0], simdjson.Array) else 0
        # every row an array of *width* items, and no other array anywhere in the body:
        # so every item is a number (as_buffer refuses anything but numbers)
        if not width or body.count(b"[") != len(rows) + 1 or any(
                not isinstance(row, simdjson.Array) or len(row) != width for row in rows):
            return None
        flat = np.frombuffer(rows.as_buffer(of_type="d"), dtype=np.float64)
    except (ValueError, TypeError, RuntimeError, KeyError, IndexError):
        return None
    if flat.size != len(rows) * width or max(flat.max(), -flat.min()) >= 2.0 ** 53:
        return None  # from 2**53 on, an integer's rounding could differ from to_array's
    return flat.reshape(len(rows), width)


def loads_v2_infer(body: bytes) -> Any:
    """Parse an Open Inference Protocol V2 ``/infer`` body as :func:`loads` does, except that
    the ``data`` of a floating-point input (FP16, FP32, FP64, BF16) holding only numbers
    comes back as a flat float64 array: simdjson reads the numbers straight into one buffer,
    with no Python object per number. Its nesting is not kept (V2 data is flattened
    row-major anyway); any other body or value takes the :func:`loads` path and its errors.
    """
    try:
        document = _parse_simdjson(body)
        if not isinstance(document, simdjson.Object):
            return loads(body)
        # items() would turn every value into Python objects: look each key up lazily
        parsed = {key: _python(document[key]) for key in document.keys() if key != "inputs"}
        if "inputs" in document:
            inputs = document["inputs"]
            parsed["inputs"] = ([_v2_input(tensor) for tensor in inputs]
                                if isinstance(inputs, simdjson.Array) else _python(inputs))
        return parsed
    except (ValueError, TypeError, RuntimeError):  # bad JSON, NaN tokens, huge integers
        return loads(body)


def _v2_input(tensor: Any) -> Any:
    if not isinstance(tensor, simdjson.Object):
        return _python(tensor)
    data = tensor.get("data")
    if tensor.get("datatype") not in ("FP16", "FP32", "FP64", "BF16") or not isinstance(
            data, simdjson.Array) or not len(data):
        return _python(tensor)
    plain = {key: _python(tensor[key]) for key in tensor.keys() if key != "data"}
    try:
        flat = np.frombuffer(data.as_buffer(of_type="d"), dtype=np.float64)
    except (TypeError, ValueError):  # null, booleans or strings among the numbers
        return _python(tensor)
    first = data[0]
    # only flat or evenly nested rows: ragged nesting gets to_array's error
    if flat.size != len(data) * (len(first) if isinstance(first, simdjson.Array) else 1):
        return _python(tensor)
    plain["data"] = flat
    return plain


def _python(value: Any) -> Any:
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value


_simdjson = threading.local()


def _parse_simdjson(body: bytes) -> Any:
    """Parse with this thread's simdjson parser: a new parser per call would allocate its
    buffers again (about 2 ms of a 2 MB body). A parser whose last document is still
    referenced refuses to parse; then a new one does."""
    parser = getattr(_simdjson, "parser", None)
    if parser is None:
        parser = _simdjson.parser = simdjson.Parser()
    try:
        return parser.parse(body)
    except RuntimeError:  # "Tried to re-use a parser while ... objects still exist"
        return simdjson.Parser().parse(body)


def dumps(obj: Any) -> bytes:
    """Print *obj* as JSON; numpy arrays and scalars may appear anywhere in it.

    orjson prints numpy arrays directly, but writes non-finite floats as ``null``; when a
    ``null`` shows up and the value really holds NaN or infinity, simplejson prints it again
    with the ``NaN``/``Infinity`` tokens.
    """
    try:
        fast = orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)
        if b"null" not in fast or _all_finite(obj):
            return fast
    except TypeError:
        pass
    text: str = simplejson.dumps(obj, default=_plain, allow_nan=True, separators=(",", ":"))
    return text.encode()


def dumps_strict(obj: Any) -> bytes:
    """Print *obj* as strict JSON, non-finite floats as ``null`` (the V2 protocol's rule,
    as KServe and MLServer print them). Numpy arrays of numbers may appear anywhere."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def _plain(value: Any) -> Any:
    # float32 values keep their shortest float32 text (2.05, not 2.049999952316284), as
    # orjson prints them on the fast path
    if isinstance(value, np.ndarray):
        if value.dtype == np.float32:
            return value.astype(str).astype(np.float64).tolist()
        return value.tolist()
    if isinstance(value, np.float32):
        return float(str(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return b64_value(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _all_finite(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.isfinite(obj).all())
    if isinstance(obj, np.floating):
        return bool(np.isfinite(obj))
    if isinstance(obj, Mapping):
        return all(_all_finite(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_all_finite(v) for v in obj)
    return True


# --- binary values --------------------------------------------------------------------------

def is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def b64_decode(value: Any, name: str) -> bytes:
    """Decode ``{"b64": "..."}``; raise :class:`InvalidInput` naming the input otherwise."""
    text = value.get("b64") if isinstance(value, dict) else None
    if not isinstance(text, str):
        raise InvalidInput(f"input {name!r}: 'b64' must hold a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"input {name!r}: invalid base64 data")


def b64_value(data: bytes) -> dict[str, str]:
    return {"b64": base64.b64encode(data).decode("ascii")}


# --- JSON values -> arrays ------------------------------------------------------------------

def to_array(values: Any, datatype: str, name: str) -> Tensor:
    """Decode JSON *values* (nested lists or a scalar) into an array of *datatype*."""
    if datatype == "BYTES":
        return _bytes_array(values, name)
    dtype = V2_TO_NUMPY.get(datatype)
    if dtype is None:
        raise InvalidInput(f"input {name!r}: unsupported datatype {datatype!r}")
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"input {name!r}: {_shape_problem(exc)}")
    kind = array.dtype.kind
    if kind == "O":
        array = _object_to_numbers(array, dtype, name)
        kind = array.dtype.kind
    if kind in "US":
        raise InvalidInput(f"input {name!r}: expected {datatype} values, got strings")
    if dtype.kind == "b":
        if kind != "b":
            raise InvalidInput(f"input {name!r}: expected BOOL values (true/false)")
        return array
    if dtype.kind in "iu":
        if kind == "f":
            raise InvalidInput(f"input {name!r}: expected {datatype} integers, got fractions")
        if array.size and kind in "iu":
            info = np.iinfo(dtype)
            if array.min() < info.min or array.max() > info.max:
                raise InvalidInput(f"input {name!r}: value out of range for {datatype}")
    return array.astype(dtype, copy=False)


def _object_to_numbers(array: Tensor, dtype: np.dtype[Any], name: str) -> Tensor:
    """Numbers mixed with ``null`` (NaN for floats); anything else is refused."""
    for value in array.flat:
        if value is None:
            if dtype.kind != "f":
                raise InvalidInput(f"input {name!r}: null is only allowed in float inputs")
        elif isinstance(value, (str, bytes, dict)):
            raise InvalidInput(f"input {name!r}: expected numbers, got {type(value).__name__}")
        elif isinstance(value, list):
            raise InvalidInput(f"input {name!r}: ragged nested lists; every row must have "
                               "the same length")
        elif not isinstance(value, (int, float, bool)):
            raise InvalidInput(f"input {name!r}: expected numbers")
    try:
        return array.astype(np.float64 if dtype.kind == "f" else dtype)
    except (OverflowError, ValueError, TypeError):
        raise InvalidInput(f"input {name!r}: value out of range for {dtype}")


def _shape_problem(exc: Exception) -> str:
    text = str(exc)
    if "inhomogeneous" in text or "sequence" in text:
        return "ragged nested lists; every row must have the same length"
    if "dimension" in text:
        return "nested too deeply"
    return "values are not a rectangular array of numbers"


def _bytes_array(values: Any, name: str) -> Tensor:
    def convert(value: Any) -> Any:
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, bytes):  # protobuf's bytes fields (gRPC)
            return value
        if is_b64(value):
            return b64_decode(value, name)
        raise InvalidInput(f"input {name!r}: expected strings or {{\"b64\": ...}} values, "
                           f"got {type(value).__name__}")

    try:
        converted = convert(values)
    except RecursionError:
        raise InvalidInput(f"input {name!r}: nested too deeply")
    shape = _nested_shape(converted, name)
    array = np.empty(shape, dtype=object)
    if shape:
        array[...] = _fill_leaves(converted, shape)
    else:
        array[()] = converted
    return array


def _nested_shape(value: Any, name: str) -> tuple[int, ...]:
    shape: list[int] = []
    level = value
    while isinstance(level, list):
        shape.append(len(level))
        if not level:
            break
        level = level[0]
    if len(shape) > 32:
        raise InvalidInput(f"input {name!r}: nested too deeply")

    def check(v: Any, depth: int) -> None:
        if depth == len(shape):
            if isinstance(v, list):
                raise InvalidInput(f"input {name!r}: ragged nested lists")
            return
        if not isinstance(v, list) or len(v) != shape[depth]:
            raise InvalidInput(f"input {name!r}: ragged nested lists; every row must have "
                               "the same length")
        for item in v:
            check(item, depth + 1)

    check(value, 0)
    return tuple(shape)


def _fill_leaves(value: list[Any], shape: tuple[int, ...]) -> Tensor:
    flat: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for item in v:
                walk(item)
        else:
            flat.append(v)

    walk(value)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(shape)


def check_shape(array: Tensor, spec: TensorSpec) -> None:
    """Raise :class:`InvalidInput` unless *array* fits *spec*'s shape (-1 fits any size)."""
    if spec.shape is None:
        return
    expected = spec.shape
    if len(expected) != array.ndim or any(
            want not in (-1, got) for want, got in zip(expected, array.shape)):
        raise InvalidInput(f"input {spec.name!r}: expected shape {list(expected)}, "
                           f"got {list(array.shape)}")


# --- row format (AI Platform, TF Serving "instances") ---------------------------------------

def rows_to_tensors(instances: Any, signature: Signature) -> dict[str, Tensor]:
    """Decode a list of instances into one array per input of *signature*.

    Each instance is a bare value when the signature has one input, or an object naming
    the inputs.
    """
    if not isinstance(instances, list):
        raise InvalidInput("'instances' must be a list")
    if not instances:
        raise InvalidInput("'instances' must not be empty")
    first = instances[0]
    if isinstance(first, dict) and not is_b64(first):
        return _named_rows(instances, signature)
    if len(signature.inputs) != 1:
        names = [spec.name for spec in signature.inputs]
        raise InvalidInput(f"the model has inputs {names}: each instance must be an object "
                           "naming them")
    spec = signature.inputs[0]
    return {spec.name: to_array(instances, spec.datatype, spec.name)}


def matrix_to_tensors(matrix: Tensor, signature: Signature) -> dict[str, Tensor] | None:
    """What :func:`rows_to_tensors` makes of the rows of a :func:`number_matrix`, or
    ``None`` unless *signature* has one floating-point input."""
    if len(signature.inputs) != 1:
        return None
    spec = signature.inputs[0]
    dtype = V2_TO_NUMPY.get(spec.datatype)
    if dtype is None or dtype.kind != "f":
        return None
    return {spec.name: matrix.astype(dtype, copy=False)}


def _named_rows(instances: list[Any], signature: Signature) -> dict[str, Tensor]:
    specs = {spec.name: spec for spec in signature.inputs}
    keys = instances[0].keys()
    unknown = [k for k in keys if k not in specs]
    if unknown:
        raise InvalidInput(f"unknown input(s) {unknown}; the model's inputs are {list(specs)}")
    columns: dict[str, list[Any]] = {k: [] for k in keys}
    for index, row in enumerate(instances):
        if not isinstance(row, dict) or row.keys() != keys:
            raise InvalidInput(f"instance {index} does not name the same inputs as instance 0")
        for key, value in row.items():
            columns[key].append(value)
    return {k: to_array(v, specs[k].datatype, k) for k, v in columns.items()}


def json_value(array: Tensor, name: str = "") -> Any:
    """An output array as plain JSON values: bytes become UTF-8 text, or ``{"b64": ...}``
    when the output's name ends in ``_bytes`` or the bytes are not text."""
    if array.dtype.kind not in "OSU":
        return array.tolist()
    as_b64 = name.endswith("_bytes")

    def text(value: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            if not as_b64:
                try:
                    return value.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return b64_value(value)
        return value.item() if isinstance(value, np.generic) else value

    if array.ndim == 0:
        return text(array.item())
    return np.frompyfunc(text, 1, 1)(array).tolist()


def tensors_to_rows(outputs: Mapping[str, Tensor]) -> list[Any]:
    """Encode outputs as one prediction per row: the bare value for a single output,
    else an object keyed by output name."""
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        values = json_value(array, name)
        return values if isinstance(values, list) else [values]
    columns = {name: json_value(array, name) for name, array in outputs.items()}
    sizes = {len(v) if isinstance(v, list) else 1 for v in columns.values()}
    if len(sizes) != 1:
        raise InvalidInput("outputs have different batch sizes; ask for columnar format")
    (size,) = sizes
    return [{name: values[i] for name, values in columns.items()} for i in range(size)]


# --- the instances door of tensor-only predictors and back ----------------------------------

def tensors_to_instances(inputs: Mapping[str, Tensor]) -> list[Any]:
    """What a custom predictor receives from a tensor protocol: one input gives its rows,
    several give one object per row."""
    return tensors_to_rows(inputs)


def predictions_to_tensor(predictions: Sequence[Any]) -> Tensor:
    """A custom predictor's list of predictions as one array: numbers stay numbers,
    text becomes BYTES, anything else one JSON document per prediction."""
    try:
        array = np.asarray(predictions)
    except (ValueError, TypeError):
        array = np.asarray([None])
    if array.dtype.kind in "biuf":
        return array
    if array.dtype.kind == "U":
        encoded: Tensor = np.frompyfunc(lambda s: s.encode("utf-8"), 1, 1)(array)
        return encoded.astype(object)
    out = np.empty(len(predictions), dtype=object)
    out[:] = [dumps(p) for p in predictions]
    return out


# --- tf.Example features -> feature rows (classify/regress on non-TensorFlow models) --------

def examples_to_rows(examples: Sequence[Mapping[str, Tensor]],
                     feature_names: Sequence[str] | None) -> Tensor:
    """A float64 ``[N, features]`` batch from examples (feature name -> 1-D array).

    With *feature_names* each example holds one number per named feature (a missing feature
    is NaN); without, each example must hold exactly one feature: the whole row as a list.
    """
    rows: list[Any] = []
    for index, example in enumerate(examples):
        if feature_names:
            unknown = [name for name in example if name not in feature_names]
            if unknown:
                raise InvalidInput(f"example {index}: unknown feature(s) {unknown}; the "
                                   f"model's features are {list(feature_names)}")
            row = []
            for name in feature_names:
                value = example.get(name)
                if value is None:
                    row.append(math.nan)
                    continue
                if value.size != 1 or value.dtype.kind not in "biuf":
                    raise InvalidInput(f"example {index}: feature {name!r} must be one number")
                row.append(float(value[0]))
            rows.append(row)
        else:
            if len(example) != 1:
                raise InvalidInput(f"example {index}: the model has no feature names, so "
                                   "each example needs exactly one feature holding the "
                                   "whole row of numbers")
            (value,) = example.values()
            if value.dtype.kind not in "biuf":
                raise InvalidInput(f"example {index}: features must be numbers")
            rows.append(value)
    try:
        return np.asarray(rows, dtype=np.float64)
    except ValueError:
        raise InvalidInput("examples hold rows of different lengths")
