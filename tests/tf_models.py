"""TensorFlow SavedModels the tests export themselves (never committed): a TF2 model with
several signatures, and TF Serving's own test models (``saved_model_half_plus_two_cpu``...),
rebuilt here with the same signatures, tensor names, shapes and values as the ones in
tensorflow/serving's ``servables/tensorflow/testdata``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

TFSERVING_VERSION = "00000123"
"""TF Serving pads the version folder of its test models: version 123."""


def _write_asset(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "foo.txt"
    path.write_text("asset-file-contents")
    return path


def _tf1_builder_save(export_dir: Path, build: Any) -> Path:
    """Build a TF1 graph with *build(tf)* -> signature map, and save it with
    SavedModelBuilder under the ``serve`` tag."""
    import tensorflow as tf

    v1 = tf.compat.v1
    builder = v1.saved_model.builder.SavedModelBuilder(os.fspath(export_dir))
    with tf.Graph().as_default(), v1.Session() as session:
        signatures, assets, main_op = build(tf)
        session.run(v1.global_variables_initializer())
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures,
                                             assets_collection=assets, main_op=main_op)
    builder.save()
    return export_dir


def export_half_plus_two_tf1(base: Path, scratch: Path) -> Path:
    """TF Serving's ``saved_model_half_plus_two_cpu``: a TF1 graph, y = 0.5x + 2, y2 = 0.5x + 3,
    y3 = 0.5x2 + 3, with predict, classify and regress signatures and an asset."""

    def build(tf: Any) -> Any:
        v1 = tf.compat.v1
        a = v1.Variable(0.5, name="a")
        b = v1.Variable(2.0, name="b")
        c = v1.Variable(3.0, name="c")
        examples = v1.placeholder(tf.string, name="tf_example")
        parsed = v1.parse_example(examples, {
            "x": v1.FixedLenFeature([1], dtype=tf.float32),
            "x2": v1.FixedLenFeature([1], dtype=tf.float32, default_value=[0.0])})
        for feature in parsed.values():  # TF 1.14 knew this from the parse spec; TF 2 needs it
            feature.set_shape([None, 1])
        x = tf.identity(parsed["x"], name="x")
        y = tf.identity(tf.add(tf.multiply(a, x), b), name="y")
        y2 = tf.identity(tf.add(tf.multiply(a, x), c), name="y2")
        x2 = tf.identity(parsed["x2"], name="x2")
        a2 = v1.Variable(0.5, name="a2")
        c2 = v1.Variable(3.0, name="c2")
        y3 = tf.identity(tf.add(tf.multiply(a2, x2), c2), name="y3")
        asset = v1.constant(os.fspath(_write_asset(scratch / "hp2_assets")))
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, asset)
        filename = v1.Variable("foo.txt", name="filename_tensor", trainable=False,
                               collections=[])
        info = v1.saved_model.utils.build_tensor_info
        sig = v1.saved_model.signature_def_utils.build_signature_def

        def regress(i: Any, o: Any) -> Any:
            return sig({"inputs": info(i)}, {"outputs": info(o)}, "tensorflow/serving/regress")

        signatures = {
            "serving_default": sig({"x": info(x)}, {"y": info(y)}, "tensorflow/serving/predict"),
            "regress_x_to_y": regress(examples, y),
            "regress_x_to_y2": regress(examples, y2),
            "regress_x2_to_y3": regress(x2, y3),
            "classify_x_to_y": sig({"inputs": info(examples)}, {"scores": info(y)},
                                   "tensorflow/serving/classify"),
        }
        return (signatures, v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
                tf.group(filename.assign("foo.txt")))

    return _tf1_builder_save(base / TFSERVING_VERSION, build)


def export_half_plus_three(base: Path, scratch: Path) -> Path:
    """TF Serving's ``saved_model_half_plus_three``, as TF 1.0 wrote it: y = 0.5x + 3,
    TensorInfos without shapes, and a regress signature named after its method whose input
    claims DT_FLOAT while it feeds the string placeholder of serialized tf.Examples."""

    def build(tf: Any) -> Any:
        v1 = tf.compat.v1
        a = v1.Variable(0.5, name="a")
        b = v1.Variable(3.0, name="b")
        c = v1.Variable(3.0, name="c")
        x = v1.placeholder(tf.float32, name="x")
        tf.identity(tf.add(tf.multiply(a, x), b), name="y")
        examples = v1.placeholder(tf.string, name="tf_example")
        parsed = v1.parse_example(examples, {"x": v1.FixedLenFeature([1], dtype=tf.float32)})
        tf.identity(tf.add(tf.multiply(a, parsed["x"]), c), name="Identity")
        asset = v1.constant(os.fspath(_write_asset(scratch / "hp3_assets")))
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, asset)
        float32 = tf.float32.as_datatype_enum

        def info(name: str) -> Any:  # no tensor_shape at all, as TF 1.0 recorded it
            return v1.TensorInfo(name=name, dtype=float32)

        sig = v1.saved_model.signature_def_utils.build_signature_def
        signatures = {
            "serving_default": sig({"x": info("x:0")}, {"y": info("y:0")},
                                   "tensorflow/serving/predict"),
            "tensorflow/serving/regress": sig({"inputs": info("tf_example:0")},
                                              {"outputs": info("Identity:0")},
                                              "tensorflow/serving/regress"),
        }
        return signatures, v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS), None

    return _tf1_builder_save(base / TFSERVING_VERSION, build)


def export_counter(base: Path) -> Path:
    """TF Serving's ``saved_model_counter``: one float variable of the old reference kind
    (so every output is DT_FLOAT_REF) and four stateful predict signatures."""

    def build(tf: Any) -> Any:
        v1 = tf.compat.v1
        counter = v1.Variable(0.0, dtype=tf.float32, name="counter", use_resource=False)
        with tf.name_scope("incr_counter_op"):
            incr = counter.assign_add(1.0)
        delta = v1.placeholder(dtype=tf.float32, name="delta")
        with tf.name_scope("incr_counter_by_op"):
            incr_by = counter.assign_add(delta)
        with tf.name_scope("reset_counter_op"):
            reset = counter.assign(0.0)
        info = v1.saved_model.utils.build_tensor_info
        sig = v1.saved_model.signature_def_utils.build_signature_def
        method = "tensorflow/serving/predict"
        signatures = {
            "get_counter": sig({}, {"output": info(counter)}, method),
            "incr_counter": sig({}, {"output": info(incr)}, method),
            "incr_counter_by": sig({"delta": info(delta)}, {"output": info(incr_by)}, method),
            "reset_counter": sig({}, {"output": info(reset)}, method),
        }
        return signatures, None, None

    return _tf1_builder_save(base / TFSERVING_VERSION, build)


def export_half_plus_two_tf2(base: Path, scratch: Path) -> Path:
    """TF Serving's ``saved_model_half_plus_two_tf2_cpu``: a native TF2 export whose six
    signatures all say method predict, with an asset and a default for ``x``."""
    import tensorflow as tf

    spec = {"x": tf.io.FixedLenFeature([1], tf.float32),
            "x2": tf.io.FixedLenFeature([1], tf.float32, default_value=[0.0])}
    one = [tf.TensorSpec([1], tf.float32, name="inputs")]
    examples = [tf.TensorSpec([None], tf.string, name="inputs")]

    class HalfPlusTwo(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = tf.Variable(0.5, name="a")
            self.b = tf.Variable(2.0, name="b")
            self.c = tf.Variable(3.0, name="c")
            self.asset = tf.saved_model.Asset(os.fspath(_write_asset(scratch / "tf2_assets")))

        @tf.function(input_signature=[tf.TensorSpec([1], tf.float32, name="x")])
        def serve(self, x: Any = tf.constant([0.0])) -> Any:
            return {"y": self.a * x + self.b}

        def parse(self, inputs: Any) -> Any:
            return tf.io.parse_example(inputs, spec)

        @tf.function(input_signature=examples)
        def classify_x_to_y(self, inputs: Any) -> Any:
            return {"scores": self.a * self.parse(inputs)["x"] + self.b}

        @tf.function(input_signature=examples)
        def regress_x_to_y(self, inputs: Any) -> Any:
            return {"outputs": self.a * self.parse(inputs)["x"] + self.b}

        @tf.function(input_signature=examples)
        def regress_x_to_y2(self, inputs: Any) -> Any:
            return {"outputs": self.a * self.parse(inputs)["x"] + self.c}

        @tf.function(input_signature=one)
        def regress_x2_to_y3(self, inputs: Any) -> Any:
            return {"outputs": self.a * inputs + self.c}

        @tf.function(input_signature=one)
        def classify_x2_to_y3(self, inputs: Any) -> Any:
            return {"scores": self.a * inputs + self.c}

    module = HalfPlusTwo()
    signatures = {name: getattr(module, name) for name in (
        "classify_x_to_y", "regress_x_to_y", "regress_x_to_y2", "regress_x2_to_y3",
        "classify_x2_to_y3")}
    signatures["serving_default"] = module.serve
    tf.saved_model.save(module, os.fspath(base / TFSERVING_VERSION), signatures=signatures)
    return base


TAG = b"\x00\xff"
"""Appended by the ``tagged_bytes`` output: not UTF-8, so it must travel as base64."""


def export_multi(base: Path, version: int = 1) -> Path:
    """A native TF2 export with several signatures:

    * ``serving_default``: ``x`` float [-1], ``s`` string [-1] -> ``doubled`` (2x, float32),
      ``rounded`` (round(x), int64), ``upper`` (upper-cased s), ``tagged_bytes`` (s + TAG)
    * ``scale``: ``x`` float [-1] -> ``y`` = 3x
    * ``ints``: ``n`` int32 [-1] -> ``m`` = n + 1 (int32)
    * ``classify``: serialized tf.Examples with float ``x`` -> ``scores`` [[x, 1-x]],
      ``classes`` [["pos", "neg"]]
    * ``regress``: serialized tf.Examples with float ``x`` -> ``outputs`` = 10x
    """
    import tensorflow as tf

    spec = {"x": tf.io.FixedLenFeature([1], tf.float32)}

    class Multi(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x"),
                                      tf.TensorSpec([None], tf.string, name="s")])
        def serve(self, x: tf.Tensor, s: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"doubled": x * 2.0, "rounded": tf.cast(tf.round(x), tf.int64),
                    "upper": tf.strings.upper(s),
                    "tagged_bytes": tf.strings.join([s, tf.constant(TAG)])}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def scale(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"y": x * 3.0}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="n")])
        def ints(self, n: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"m": n + 1}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
            x = tf.io.parse_example(inputs, spec)["x"]
            batch = tf.shape(x)[0]
            return {"scores": tf.concat([x, 1.0 - x], axis=1),
                    "classes": tf.tile(tf.constant([["pos", "neg"]]), [batch, 1])}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"outputs": tf.io.parse_example(inputs, spec)["x"][:, 0] * 10.0}

    module = Multi()
    folder = base / str(version)
    tf.saved_model.save(module, os.fspath(folder), signatures={
        "serving_default": module.serve, "scale": module.scale, "ints": module.ints,
        "classify": module.classify, "regress": module.regress})
    return base


def export_tfserving_models(root: Path) -> Path:
    """TF Serving's four test models under *root*, named and laid out as in its testdata
    (``<root>/saved_model_counter/00000123/...``). Exports once: a second call with the
    same *root* returns at once."""
    done = root / ".exported"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    scratch = root / ".assets"
    export_half_plus_two_tf1(root / "saved_model_half_plus_two_cpu", scratch)
    export_half_plus_three(root / "saved_model_half_plus_three", scratch)
    export_half_plus_two_tf2(root / "saved_model_half_plus_two_tf2_cpu", scratch)
    export_counter(root / "saved_model_counter")
    done.touch()
    return root


def copy_version(tfserving: Path, source: str, base: Path, version: int) -> Path:
    """Copy the single version of TF Serving test model *source* (under *tfserving*, see
    :func:`export_tfserving_models`) as *version* of *base*."""
    (folder,) = [p for p in (tfserving / source).iterdir() if p.name.isdigit()]
    shutil.copytree(folder, base / str(version))
    return base


@pytest.fixture(scope="session")
def tfserving_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TF Serving's test models, exported once per test session (skips without TensorFlow)."""
    pytest.importorskip("tensorflow")
    return export_tfserving_models(tmp_path_factory.getbasetemp() / "tfserving")
