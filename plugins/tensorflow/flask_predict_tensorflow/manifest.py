"""What flask-predict may know about this plugin without importing TensorFlow.

A version folder is TensorFlow's when it holds a SavedModel (``saved_model.pb`` or
``saved_model.pbtxt``), or else one Keras file: ``*.keras`` (Keras 3's format, what
``model.save("model.keras")`` writes) or ``*.h5`` / ``*.hdf5`` (the legacy HDF5 format).

- A SavedModel beside Keras files is what is served, as TF Serving serves that folder; the
  Keras files are left alone (the predictor logs that it ignores them).
- Several Keras files and no SavedModel: which one to serve is unclear, so it is refused.
- Keras weights files (``*.weights.h5``) hold no architecture and are not served.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from flask_predict.errors import ConfigError
from flask_predict.models.plugins import Manifest

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
WEIGHTS_SUFFIXES = (".weights.h5", ".weights.hdf5")


def has_saved_model(model_dir: str) -> bool:
    """Whether *model_dir* holds a SavedModel."""
    return any(os.path.isfile(os.path.join(model_dir, name)) for name in SAVED_MODEL_FILES)


def keras_files(model_dir: str) -> list[str]:
    """The names of the Keras model files in *model_dir* (weights files left out), sorted."""
    try:
        names = sorted(os.listdir(model_dir))
    except OSError:
        return []
    return [name for name in names if name.lower().endswith(KERAS_SUFFIXES)
            and not name.lower().endswith(WEIGHTS_SUFFIXES)
            and os.path.isfile(os.path.join(model_dir, name))]


def keras_file(model_dir: str) -> str | None:
    """The one Keras model file of a folder without a SavedModel; ``None`` when there is none.

    :raises ConfigError: several Keras files, or only a weights file.
    """
    found = keras_files(model_dir)
    if len(found) > 1:
        raise ConfigError(f"several Keras model files in {model_dir!r}: {found}; keep one")
    if found:
        return found[0]
    weights = [name for name in sorted(os.listdir(model_dir))
               if name.lower().endswith(WEIGHTS_SUFFIXES)] if os.path.isdir(model_dir) else []
    if weights:
        raise ConfigError(f"{weights[0]!r} in {model_dir!r} holds weights only; save the whole "
                          "model (model.save('model.keras')) or export a SavedModel")
    return None


def detect(model_dir: str, options: Mapping[str, Any]) -> float:
    """A SavedModel folder, or one holding a single Keras model file."""
    if has_saved_model(model_dir) or keras_file(model_dir) is not None:
        return 0.9
    return 0.0


MANIFEST = Manifest(options=frozenset({"tags", "signature"}), detect=detect,
                    mlflow_flavors=frozenset({"tensorflow", "keras"}))
