"""Keras models the tests save themselves with Keras's documented API (never committed):
``model.save("model.keras")``, Keras 3's default, and the legacy ``model.save("model.h5")``,
each as version 1 of a model folder, with one input and with several named ones.

- ``classifier_keras`` / ``classifier_h5``: a ``Sequential`` classifier, one input
  ``features`` [-1, 4] -> softmax over 3 classes (output ``output_0``).
- ``named_keras``: a functional model with dict inputs ``age`` (a number per row),
  ``income`` [-1, 2], ``rooms`` (an int64 per row) and ``city`` (a string per row, one-hot
  encoded by a ``StringLookup``), and dict outputs ``price`` [-1, 1] and ``kind`` [-1, 2].
- ``named_h5``: a functional model with list inputs ``size`` [-1, 3] and ``rooms`` (int32
  [-1, 1] into an ``Embedding``), and list outputs ``output_0`` [-1, 1], ``output_1`` [-1, 2]
  (HDF5 holds layers only, so no string lookup or casts here).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

MODELS = ("classifier_keras", "classifier_h5", "named_keras", "named_h5")

CITIES = ["paris", "lyon", "nice"]


def _classifier() -> Any:
    import keras

    model = keras.Sequential([keras.Input((4,), name="features"),
                              keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    rows = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    model.fit(rows, (rows[:, 0] > 0).astype("int64") + (rows[:, 1] > 0), epochs=2, verbose=0)
    return model


def _named() -> Any:
    import keras

    age = keras.Input((), name="age")
    income = keras.Input((2,), name="income")
    rooms = keras.Input((), name="rooms", dtype="int64")
    city = keras.Input((), name="city", dtype="string")
    onehot = keras.layers.StringLookup(vocabulary=CITIES, output_mode="one_hot")(city)
    numbers = [keras.layers.Reshape((1,))(age), income,
               keras.layers.Reshape((1,))(keras.ops.cast(rooms, "float32")), onehot]
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()(numbers))
    return keras.Model({"age": age, "income": income, "rooms": rooms, "city": city},
                       {"price": keras.layers.Dense(1)(hidden),
                        "kind": keras.layers.Dense(2, activation="softmax")(hidden)})


def _named_layers_only() -> Any:
    import keras

    size = keras.Input((3,), name="size")
    rooms = keras.Input((1,), name="rooms", dtype="int32")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(10, 2)(rooms))
    hidden = keras.layers.Dense(4, activation="tanh")(keras.layers.Concatenate()([size,
                                                                                  embedded]))
    return keras.Model([size, rooms], [keras.layers.Dense(1, name="price")(hidden),
                                       keras.layers.Dense(2, activation="softmax",
                                                          name="kind")(hidden)])


def save_keras_models(root: Path) -> Path:
    """The four models under *root* (``<root>/<name>/1/model.keras`` or ``model.h5``).
    Saves once: a second call with the same *root* returns at once."""
    done = root / ".saved"
    if done.exists():
        return root
    import keras

    keras.utils.set_random_seed(0)
    classifier = _classifier()
    for name, model, file_name in [("classifier_keras", classifier, "model.keras"),
                                   ("classifier_h5", classifier, "model.h5"),
                                   ("named_keras", _named(), "model.keras"),
                                   ("named_h5", _named_layers_only(), "model.h5")]:
        folder = root / name / "1"
        folder.mkdir(parents=True, exist_ok=True)
        model.save(folder / file_name)
    done.touch()
    return root


def sample_inputs(name: str, rows: int = 3) -> dict[str, np.ndarray]:
    """Inputs for model *name*, *rows* rows, in the dtypes the model declares."""
    rng = np.random.default_rng(len(name) + rows)
    if name.startswith("classifier"):
        return {"features": rng.normal(size=(rows, 4)).astype("float32")}
    if name == "named_keras":
        return {"age": rng.uniform(20, 60, rows).round(1).astype("float32"),
                "income": rng.normal(size=(rows, 2)).astype("float32"),
                "rooms": rng.integers(1, 6, rows).astype("int64"),
                "city": np.array([CITIES[i % 3].encode() for i in range(rows)], object)}
    return {"size": rng.normal(size=(rows, 3)).astype("float32"),
            "rooms": rng.integers(0, 10, (rows, 1)).astype("int32")}


def keras_predict(model: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``model.predict`` on named *inputs*, its outputs named as the server names them: a
    dict's keys, else ``output_<i>`` in order. Strings go in as a string tensor
    (``predict`` refuses numpy object arrays)."""
    import tensorflow as tf

    feeds = {name: tf.constant(list(value)) if value.dtype == object else value
             for name, value in inputs.items()}
    if len(model.inputs) == 1:
        (feeds,) = feeds.values()
    got = model.predict(feeds, verbose=0)
    if isinstance(got, dict):
        return {str(key): np.asarray(value) for key, value in got.items()}
    if not isinstance(got, (list, tuple)):
        got = [got]
    return {f"output_{i}": np.asarray(value) for i, value in enumerate(got)}


KERAS2_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    size = keras.Input((3,), name="size")
    rooms = keras.Input((1,), name="rooms", dtype="int32")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(10, 2)(rooms))
    hidden = keras.layers.Dense(4, activation="tanh")(
        keras.layers.Concatenate()([size, embedded]))
    model = keras.Model([size, rooms], [keras.layers.Dense(1, name="price")(hidden),
                                        keras.layers.Dense(2, activation="softmax")(hidden)])
    model.compile("adam", "mse")
    model.save(sys.argv[1] + "/1/model.h5")
    inputs = np.load(sys.argv[1] + "/inputs.npz")
    outputs = model.predict([inputs["size"], inputs["rooms"]], verbose=0)
    np.savez(sys.argv[1] + "/outputs.npz", *outputs)
    """)


def save_keras2_h5(base: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A two-input model saved as ``.h5`` by Keras 2 (``tf_keras``, what ``tf.keras`` was
    before TensorFlow 2.16), in a process of its own: version 1 of *base*. Returns the
    inputs given to Keras 2's ``predict`` and its outputs (``output_0``, ``output_1``)."""
    pytest.importorskip("tf_keras", reason="pip install tf-keras (requirements-test.txt)")
    (base / "1").mkdir(parents=True)
    inputs = sample_inputs("named_h5")
    np.savez(base / "inputs.npz", **inputs)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", KERAS2_SCRIPT, os.fspath(base)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(base / "outputs.npz") as saved:
        outputs = {f"output_{i}": saved[f"arr_{i}"] for i in range(len(saved.files))}
    return inputs, outputs


@pytest.fixture(scope="session")
def keras_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Keras models, saved once per test session (skips without TensorFlow)."""
    pytest.importorskip("tensorflow")
    return save_keras_models(tmp_path_factory.getbasetemp() / "keras")
