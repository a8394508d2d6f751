"""A TensorFlow step that never ends stops at the model's time limit: the plugin passes the
time left to ``RunOptions.timeout_in_ms``, which cancels the step inside TensorFlow, where the
``SIGALRM`` timer cannot reach until the step returns."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tensorflow

ROOT = Path(__file__).resolve().parents[3]


def export_blocking(path: Path) -> None:
    """A TF1 SavedModel whose ``serving_default`` output dequeues from an empty queue: a step
    that waits forever unless cancelled."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        queue = tf.queue.FIFOQueue(1, [tf.float32], shapes=[[]])
        waited = tf.identity(queue.dequeue() + tf.reduce_sum(x), name="waited")
        with tf.compat.v1.Session(graph=graph) as session:
            builder = tf.compat.v1.saved_model.Builder(str(path))
            signature = tf.compat.v1.saved_model.predict_signature_def({"x": x},
                                                                       {"waited": waited})
            builder.add_meta_graph_and_variables(
                session, ["serve"], signature_def_map={"serving_default": signature})
            builder.save()


CALL = """
import numpy as np
from flask_predict.runtime import deadline
from flask_predict.errors import DeadlineExceeded
from flask_predict_tensorflow import TensorFlowPredictor

predictor = TensorFlowPredictor.from_path({path!r})
try:
    with deadline.limit(0.5, "blocking"):
        predictor.predict_tensors({{"x": np.array([1.0], np.float32)}})
except DeadlineExceeded as exc:
    print("deadline exceeded:", exc.message)
"""


def test_a_step_that_never_ends_stops_at_the_limit(tmp_path: Path) -> None:
    export_blocking(tmp_path / "1")
    # In a process of its own: were the step not cancelled, it would never return.
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(CALL.format(
        path=str(tmp_path / "1")))], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "deadline exceeded: " in result.stdout
