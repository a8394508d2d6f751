"""ONNX models made by the tests (never committed), each as its usual producer writes it:

* ``torch``: a two-layer classifier built with the ``onnx`` helper API as PyTorch's exporter
  writes one (``torch.onnx.export(..., input_names=["input"], output_names=["output"],
  dynamic_axes={"input": {0: "batch_size"}, ...})``: Gemm, Relu, Gemm, Softmax, a named
  dynamic batch axis);
* ``types``: one input of every ONNX tensor type the protocols carry, strings included,
  each passed through to an output of its own;
* ``pipeline``: a scikit-learn DataFrame pipeline (numbers scaled, a text column one-hot
  encoded, a LogisticRegression) converted by skl2onnx, one typed input per column;
* ``keras``: a Keras model exported by Keras itself (``model.export(format="onnx")``,
  tf2onnx underneath).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

TYPES = {"FP32": np.float32, "FP64": np.float64, "FP16": np.float16, "INT8": np.int8,
         "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
         "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "BOOL": np.bool_,
         "BYTES": object}
"""Each input of the ``types`` model (named by its V2 datatype, lower case) -> numpy's type."""

CITIES = ["Paris", "London", "Rome"]
PIPELINE_ROWS: list[dict[str, Any]] = [
    {"age": 31, "income": 40000.5, "city": "Paris"},
    {"age": 58, "income": 61000.0, "city": "Rome"},
    {"age": 44, "income": 52500.25, "city": "London"},
]


def _folder(base: Path, version: int) -> Path:
    folder = base / str(version)
    folder.mkdir(parents=True)
    return folder


def _save(model: Any, folder: Path) -> None:
    import onnx

    onnx.checker.check_model(model)
    onnx.save(model, folder / "model.onnx")


def torch_like(base: Path, version: int = 1) -> dict[str, np.ndarray]:
    """The ``torch`` model in *base*/*version*; returns its weights (float32)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    weights = {"fc1.weight": rng.normal(size=(8, 4)).astype(np.float32),
               "fc1.bias": rng.normal(size=8).astype(np.float32),
               "fc2.weight": rng.normal(size=(3, 8)).astype(np.float32),
               "fc2.bias": rng.normal(size=3).astype(np.float32)}
    nodes = [
        helper.make_node("Gemm", ["input", "fc1.weight", "fc1.bias"], ["/fc1/Gemm_output_0"],
                         name="/fc1/Gemm", transB=1),
        helper.make_node("Relu", ["/fc1/Gemm_output_0"], ["/relu/Relu_output_0"],
                         name="/relu/Relu"),
        helper.make_node("Gemm", ["/relu/Relu_output_0", "fc2.weight", "fc2.bias"],
                         ["/fc2/Gemm_output_0"], name="/fc2/Gemm", transB=1),
        helper.make_node("Softmax", ["/fc2/Gemm_output_0"], ["output"], name="/Softmax",
                         axis=1),
    ]
    graph = helper.make_graph(
        nodes, "main_graph",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch_size", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch_size", 3])],
        initializer=[numpy_helper.from_array(value, name) for name, value in weights.items()])
    model = helper.make_model(graph, producer_name="pytorch", producer_version="2.5.0",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    _save(model, _folder(base, version))
    return weights


def torch_like_answer(weights: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """What the ``torch`` model computes, in float64."""
    hidden = np.maximum(rows @ weights["fc1.weight"].T.astype(np.float64)
                        + weights["fc1.bias"], 0.0)
    scores = hidden @ weights["fc2.weight"].T.astype(np.float64) + weights["fc2.bias"]
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    answer: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
    return answer


def every_type(base: Path, version: int = 1) -> None:
    """The ``types`` model: input ``<datatype>`` (``[batch, 2]``) -> output
    ``<datatype>_out``, for every datatype of :data:`TYPES`."""
    from onnx import TensorProto, helper

    onnx_types = {"FP32": TensorProto.FLOAT, "FP64": TensorProto.DOUBLE,
                  "FP16": TensorProto.FLOAT16, "INT8": TensorProto.INT8,
                  "INT16": TensorProto.INT16, "INT32": TensorProto.INT32,
                  "INT64": TensorProto.INT64, "UINT8": TensorProto.UINT8,
                  "UINT16": TensorProto.UINT16, "UINT32": TensorProto.UINT32,
                  "UINT64": TensorProto.UINT64, "BOOL": TensorProto.BOOL,
                  "BYTES": TensorProto.STRING}
    names = {datatype: datatype.lower() for datatype in TYPES}
    graph = helper.make_graph(
        [helper.make_node("Identity", [name], [f"{name}_out"]) for name in names.values()],
        "types",
        [helper.make_tensor_value_info(names[d], t, ["batch", 2]) for d, t in onnx_types.items()],
        [helper.make_tensor_value_info(f"{names[d]}_out", t, ["batch", 2])
         for d, t in onnx_types.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    _save(model, _folder(base, version))


def type_values(datatype: str) -> np.ndarray:
    """Two rows of *datatype*'s values, each exact in its type."""
    if datatype == "BYTES":
        return np.array([["a", "été"], ["", "東京"]], dtype=object)
    if datatype == "BOOL":
        return np.array([[True, False], [False, True]])
    return np.array([[1, 2], [3, 100]], dtype=TYPES[datatype])


def pipeline(base: Path, version: int = 1) -> Any:
    """The ``pipeline`` model converted by skl2onnx from a frame of three column types
    (``age`` int64, ``income`` float32, ``city`` text), with its default ZipMap (the
    probabilities as one map per row); returns the fitted pipeline."""
    import pandas as pd
    from skl2onnx import to_onnx
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(5)
    n = 200
    people = pd.DataFrame({"age": rng.integers(18, 80, n),
                           "income": rng.normal(5e4, 1.2e4, n).astype(np.float32),
                           "city": rng.choice(CITIES, n)})
    stays = ((people.city == "Paris") | (people.age > 50)).astype(np.int64)
    model = make_pipeline(ColumnTransformer([
        ("numbers", StandardScaler(), ["age", "income"]),
        ("city", OneHotEncoder(handle_unknown="ignore"), ["city"])]),
        LogisticRegression()).fit(people, stays)
    converted = to_onnx(model, people[:1], target_opset=17)
    _save(converted, _folder(base, version))
    return model


def keras_model(base: Path, version: int = 1) -> Any:
    """The ``keras`` model: a small classifier of 4 features named ``features``, exported by
    Keras; returns the Keras model."""
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,), name="features"),
                              keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model(np.zeros((1, 4), dtype=np.float32))  # built: the exporter traces a called model
    with warnings.catch_warnings():
        # tf2onnx, which Keras's exporter runs, still reads numpy's removed ``np.object``
        warnings.filterwarnings("ignore", "In the future `np.object`", FutureWarning)
        model.export(str(_folder(base, version) / "model.onnx"), format="onnx", verbose=False)
    return model
