"""What TensorFlow reads from the environment when it loads, set before it loads.

TensorFlow's C++ logging reads ``TF_CPP_MIN_LOG_LEVEL`` once, when its library loads, so the
level is set here, on the plugin's import path (the package's ``__init__`` runs before any of
its modules imports TensorFlow), never later. A value the operator set is kept.

- Without a GPU the level is ``3`` (fatal only): a TensorFlow built for CUDA writes
  ``E0000 ... failed call to cuInit: ... CUDA error`` on every CPU machine, an error line
  about a GPU that was never there.
- With a GPU it is ``2``: info and warnings are left out, errors (a failing CUDA, cuDNN or
  out-of-memory condition) are kept.
"""

from __future__ import annotations

import os

from flask_predict.plugin import detected_gpus

LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"


def native_log_level() -> str:
    """The C++ log level for this machine: ``"3"`` without a visible GPU, else ``"2"``."""
    return "2" if detected_gpus() else "3"


def quiet_native_logs() -> None:
    """Set TensorFlow's C++ log level, unless set already; does nothing once TensorFlow
    has loaded (too late to matter, and the process's setting is left as it was)."""
    import sys

    if "tensorflow" not in sys.modules:
        os.environ.setdefault(LOG_LEVEL_VARIABLE, native_log_level())
