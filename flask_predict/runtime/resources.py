"""Process-wide resources of a serving process: native thread pools, the GPU it uses, the
allocator's thresholds (:mod:`.memory`), the garbage collector. One owner: the server (gunicorn's hooks in :mod:`flask_predict.process.server`)
calls these; ``init_app`` calls them only when ``PREDICT_MANAGE_PROCESS`` asks, so an app
that embeds the extension keeps its process as it was.
"""

from __future__ import annotations

import gc
import logging
import os
from typing import Sequence

from . import memory

logger = logging.getLogger(__name__)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
"""Read by OpenMP (scikit-learn, XGBoost), the BLAS libraries and TensorFlow at load time."""

NVIDIA_GPUS = "/proc/driver/nvidia/gpus"
"""One entry per NVIDIA GPU the driver sees: counting them needs no framework."""


def prepare_process(threads: int, gpus: Sequence[int] | None,
                    worker_index: int | None) -> None:
    """Before any framework loads: size thread pools, pick this worker's GPU and fix the
    allocator's thresholds (:func:`.memory.fix_thresholds`)."""
    limit_threads(threads)
    memory.fix_thresholds()
    assign_gpu(gpus, worker_index)


def settle_process(threads: int) -> None:
    """After the models loaded: limit pools the frameworks started, freeze the heap."""
    limit_loaded_pools(threads)
    freeze_heap()


def limit_threads(threads: int) -> None:
    """Size every native thread pool of this process to *threads*.

    Libraries not loaded yet read the environment variables when they load; those already
    loaded (numpy's BLAS) are limited through threadpoolctl. With library defaults each of
    several workers would start one thread per core, and they would fight over the cores.
    """
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    limit_loaded_pools(threads)


def process_threads() -> int | None:
    """The thread count :func:`limit_threads` gave this process (each gunicorn worker's share
    of the cores; one in the master while it loads shared models), ``None`` when none was
    set: what a plugin sizes its framework's own pools to."""
    value = os.environ.get(THREAD_VARIABLES[0], "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def passive_waits() -> None:
    """Let OpenMP's threads sleep between parallel regions instead of spinning (unless
    ``OMP_WAIT_POLICY`` is set), before OpenMP loads. A process that does its own work
    between predictions (a batch job parsing and printing) would otherwise share its cores
    with threads spinning for the next prediction: a one-process batch job of XGBoost on 2
    busy cores scored 5 times slower with spinning threads than with sleeping ones."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def limit_loaded_pools(threads: int) -> None:
    """Limit the pools of libraries already loaded in this process (BLAS, OpenMP)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    logger.debug("native thread pools limited to %d", threads)


def detected_gpus() -> tuple[int, ...]:
    """The NVIDIA GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set (numeric
    form), else every GPU the driver lists; none without a driver."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        parts = [p.strip() for p in visible.split(",") if p.strip()]
        if all(p.isdigit() for p in parts):
            return tuple(int(p) for p in parts)
        return ()
    try:
        return tuple(range(len(os.listdir(NVIDIA_GPUS))))
    except OSError:
        return ()


def worker_gpu(gpus: Sequence[int] | None, worker_index: int | None) -> int | None:
    """The GPU of worker *worker_index*: ``gpus[index mod len(gpus)]``, with *gpus* from
    ``PREDICT_GPUS`` or else :func:`detected_gpus`; ``None`` without a GPU."""
    if gpus is None:
        gpus = detected_gpus()
    if not gpus:
        return None
    return gpus[(worker_index or 0) % len(gpus)]


def assign_gpu(gpus: Sequence[int] | None, worker_index: int | None) -> None:
    """Show this process only its GPU (``CUDA_VISIBLE_DEVICES``), before any framework
    initialises CUDA: the one place GPUs are placed. Without a GPU nothing changes."""
    chosen = worker_gpu(gpus, worker_index)
    if chosen is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(chosen)
        logger.info("worker %s uses GPU %d", worker_index, chosen)


def freeze_heap() -> None:
    """Take every object alive now (frameworks and models just loaded) out of the garbage
    collector's generations.

    ``import tensorflow`` alone leaves about 300,000 objects; every full collection would
    walk them again, and a response that allocates many objects (10,000 rows) triggers
    several: converting a 10,000 x 3 array to lists took 43 ms instead of 3 ms. Objects
    created later are collected as usual.
    """
    gc.collect()
    gc.freeze()
