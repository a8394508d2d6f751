"""GPU placement for one worker process: memory growth, and one GPU per worker.

Runs once per process, before any model loads (a CUDA context cannot survive a fork, so it
only ever runs inside a worker). Without a GPU nothing changes and models run on the CPU.
"""

from __future__ import annotations

import logging
import os
from typing import Sequence

logger = logging.getLogger(__name__)

GPUS_VARIABLE = "FLASK_PREDICT_GPUS"
"""Comma-separated GPU indices (``PREDICT_GPUS`` in the worker's environment)."""
WORKER_INDEX_VARIABLE = "FLASK_PREDICT_WORKER_INDEX"
"""Set by gunicorn's ``post_fork`` hook (``flask_predict.server.worker_started``)."""

_configured = False


def gpu_for_worker(gpus: Sequence[int] | None, worker_index: int, available: int) -> int | None:
    """The GPU worker *worker_index* uses: ``gpus[index mod len(gpus)]``.

    With no list every GPU present is shared in turn (``index mod available``). ``None``
    when there is no GPU. A listed GPU that does not exist raises ``ValueError``.
    """
    if available <= 0:
        return None
    choices = list(gpus) if gpus else list(range(available))
    chosen = choices[worker_index % len(choices)]
    if not 0 <= chosen < available:
        raise ValueError(f"PREDICT_GPUS names GPU {chosen}, but this machine has {available}")
    return chosen


def parse_gpus(text: str | None) -> list[int] | None:
    """``"0,1"`` or ``"[0, 1]"`` -> ``[0, 1]``; empty -> ``None``."""
    if not text:
        return None
    cleaned = text.strip().strip("[]")
    return [int(part) for part in cleaned.split(",") if part.strip()] or None


def configure_devices() -> None:
    """Enable memory growth on every visible GPU and keep only this worker's GPU visible.

    Idempotent: later calls in the same process do nothing (TensorFlow refuses to change
    devices once initialised).
    """
    global _configured
    if _configured:
        return
    _configured = True
    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")
    if not physical:
        logger.info("tensorflow: no GPU, running on the CPU")
        return
    index = int(os.environ.get(WORKER_INDEX_VARIABLE, "0") or 0)
    chosen = gpu_for_worker(parse_gpus(os.environ.get(GPUS_VARIABLE)), index, len(physical))
    try:
        tf.config.set_visible_devices([physical[chosen]], "GPU")
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError as exc:  # devices were initialised before this call
        logger.warning("tensorflow: GPUs already initialised, placement not applied: %s", exc)
        return
    logger.info("tensorflow: worker %d uses GPU %d of %d with memory growth", index, chosen,
                len(physical))
