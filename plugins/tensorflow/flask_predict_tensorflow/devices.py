"""GPU memory for one worker process.

Which GPU a worker uses is decided once, by the server, before TensorFlow loads
(``flask_predict.runtime.resources.assign_gpu`` narrows ``CUDA_VISIBLE_DEVICES`` to it). This module
only lets memory grow on demand on the GPUs this process sees. Without a GPU nothing
changes and models run on the CPU.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

_configured = False


def configure_devices() -> None:
    """Let GPU memory grow on demand on every visible GPU.

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
    if not physical:
        logger.info("tensorflow: no GPU, running on the CPU")
        return
    try:
        for device in physical:
            tf.config.experimental.set_memory_growth(device, True)
    except RuntimeError as exc:  # devices were initialised before this call
        logger.warning("tensorflow: GPUs already initialised, memory growth not set: %s", exc)
        return
    logger.info("tensorflow: %d visible GPU(s) with memory growth: %s", len(physical),
                [d.name for d in physical])
