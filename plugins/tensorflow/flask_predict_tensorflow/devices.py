"""GPU setup for one worker process: memory growth, and one GPU per worker.

Runs once per process, before any model loads (a CUDA context cannot survive a fork, so it
only ever runs inside a worker). ``PREDICT_GPUS`` has already narrowed the visible GPUs to
this worker's one (``flask_predict.runtime.assign_gpu``); without it, workers take the
visible GPUs in turn. Without a GPU nothing changes and models run on the CPU.
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

WORKER_INDEX_VARIABLE = "FLASK_PREDICT_WORKER_INDEX"
"""Set by gunicorn's ``post_fork`` hook (``flask_predict.server.worker_started``)."""

_configured = False


def gpu_for_worker(worker_index: int, available: int) -> int | None:
    """The visible GPU worker *worker_index* uses: ``index mod available``; ``None``
    without a GPU."""
    if available <= 0:
        return None
    return worker_index % available


def configure_devices() -> None:
    """Keep one GPU visible to this worker and let its memory grow on demand.

    Without memory growth TensorFlow reserves nearly all of a GPU's memory in the first
    process that touches it, and the next worker on that GPU runs out of memory.
    Idempotent: later calls in the same process do nothing (TensorFlow refuses to change
    devices once initialised).
    """
    global _configured
    if _configured:
        return
    _configured = True
    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")
    index = int(os.environ.get(WORKER_INDEX_VARIABLE, "0") or 0)
    chosen = gpu_for_worker(index, len(physical))
    if chosen is None:
        logger.info("tensorflow: no GPU, running on the CPU")
        return
    try:
        tf.config.set_visible_devices([physical[chosen]], "GPU")
        tf.config.experimental.set_memory_growth(physical[chosen], True)
    except RuntimeError as exc:  # devices were initialised before this call
        logger.warning("tensorflow: GPUs already initialised, placement not applied: %s", exc)
        return
    logger.info("tensorflow: worker %d uses visible GPU %d of %d with memory growth", index,
                chosen, len(physical))
