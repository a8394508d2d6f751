"""Per-process resources: the native thread pools of the libraries a worker loads."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
"""Read by OpenMP (scikit-learn, XGBoost), the BLAS libraries and TensorFlow at load time."""


def limit_threads(threads: int) -> None:
    """Size every native thread pool of this process to *threads*.

    Libraries not loaded yet read the environment variables when they load; those already
    loaded (numpy's BLAS) are limited through threadpoolctl. With library defaults each of
    several workers would start one thread per core, and they would fight over the cores.
    """
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    limit_loaded_pools(threads)


def limit_loaded_pools(threads: int) -> None:
    """Limit the pools of libraries already loaded in this process (BLAS, OpenMP)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    logger.debug("native thread pools limited to %d", threads)
