"""A TF2 SavedModel the tests export themselves (never committed), and TF Serving's own
test models from the shared test data, arranged as model folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

TFSERVING = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "tfserving"
"""TF Serving's exported test models (``saved_model_half_plus_two_cpu`` ...)."""

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


def copy_version(source: str, base: Path, version: int) -> Path:
    """Copy the single version of TF Serving test model *source* as *version* of *base*."""
    (folder,) = [p for p in (TFSERVING / source).iterdir() if p.name.isdigit()]
    shutil.copytree(folder, base / str(version))
    return base
