"""TensorFlow's C++ log level, set on the plugin's import path: without a GPU, loading and
running models writes no error or warning line, and the plugin calls no deprecated API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flask_predict.runtime import resources as runtime
from flask_predict_tensorflow import environment

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from flask_predict.models.plugins import load_predictor_class

    cls = load_predictor_class("tensorflow")
    saved_model, keras_file = sys.argv[1:]
    one = cls.from_path(saved_model)
    print(one.predict_tensors({"x": np.ones((1, 1), np.float32)})["y"].tolist())
    two = cls.from_path(keras_file)
    print(two.predict([[0.5, 0.5, 0.5, 0.5]]))
    """)

LOADING_NOTES = re.compile(r"^(I\d{4} .*|WARNING: All log messages before absl::InitializeLog\(\) "
                           r"is called are written to STDERR)$")
"""What TensorFlow's libraries write as they load, before any setting is read: info lines,
and absl's one notice that they went to stderr. Nothing else may appear."""


@pytest.mark.tensorflow
def test_loading_and_predicting_writes_no_warning_or_error(tfserving_models: Path,
                                                           keras_models: Path) -> None:
    if os.path.isdir(runtime.NVIDIA_GPUS) and os.listdir(runtime.NVIDIA_GPUS):
        pytest.skip("this machine has a GPU: errors are kept there")
    (saved_model,) = (tfserving_models / "saved_model_half_plus_two_cpu").iterdir()
    env = {k: v for k, v in os.environ.items()  # what this machine has, nothing narrowed
           if k not in (environment.LOG_LEVEL_VARIABLE, "PYTHONWARNINGS",
                        "CUDA_VISIBLE_DEVICES")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, os.fspath(saved_model),
                           os.fspath(keras_models / "classifier_keras" / "1")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == "[[2.5]]"
    lines = [line for line in done.stderr.splitlines() if not LOADING_NOTES.match(line)]
    assert lines == [], "\n".join(lines)
    assert "CUDA" not in done.stderr and "deprecated" not in done.stderr


@pytest.mark.tensorflow
def test_the_demo_writes_no_warning_or_error(tmp_path: Path) -> None:
    """``flask-predict demo`` exports its SavedModel with TensorFlow itself: the plugin's
    package is imported first, so the level is set there too."""
    if os.path.isdir(runtime.NVIDIA_GPUS) and os.listdir(runtime.NVIDIA_GPUS):
        pytest.skip("this machine has a GPU: errors are kept there")
    env = {k: v for k, v in os.environ.items()
           if k not in (environment.LOG_LEVEL_VARIABLE, "PYTHONWARNINGS",
                        "CUDA_VISIBLE_DEVICES")}
    command = "import sys; from flask_predict.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", command, "demo", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "half_plus_two: written (tensorflow)" in done.stdout
    lines = [line for line in done.stderr.splitlines() if not LOADING_NOTES.match(line)]
    assert lines == [], "\n".join(lines)
    assert "CUDA" not in done.stderr


def test_the_level_follows_the_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "detected_gpus", lambda: ())
    assert environment.native_log_level() == "3"
    monkeypatch.setattr(environment, "detected_gpus", lambda: (0,))
    assert environment.native_log_level() == "2"


def test_an_operator_s_level_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(environment.LOG_LEVEL_VARIABLE, "0")
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    environment.quiet_native_logs()
    assert os.environ[environment.LOG_LEVEL_VARIABLE] == "0"
    monkeypatch.delenv(environment.LOG_LEVEL_VARIABLE)
    monkeypatch.setattr(environment, "detected_gpus", lambda: ())
    environment.quiet_native_logs()
    assert os.environ[environment.LOG_LEVEL_VARIABLE] == "3"


def test_set_before_tensorflow_loads() -> None:
    """Importing the plugin package, as the master does for the manifest, sets the level
    and loads no TensorFlow."""
    script = textwrap.dedent("""
        import os, sys
        import flask_predict_tensorflow
        assert "tensorflow" not in sys.modules
        print(os.environ["TF_CPP_MIN_LOG_LEVEL"])
        """)
    env = {k: v for k, v in os.environ.items() if k != environment.LOG_LEVEL_VARIABLE}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == environment.native_log_level()
