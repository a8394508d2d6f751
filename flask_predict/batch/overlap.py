"""A one-process job's chunks scored in order, on two cores where it pays: a model's
predictions overlapped with the parsing of the next chunk, or else the output written
while the next chunks are scored.

Parsing a chunk and printing its lines hold Python's lock; many models predict without it
(XGBoost, LightGBM, TensorFlow). For those, chunk *i* predicts on a thread of its own while
this thread reads and parses chunk *i + 1*, so the job takes about the longer of the two
instead of their sum. Handing a chunk to that thread and back costs more than a cheap
model's prediction (a linear model's is about 1% of a chunk's time), so the first chunks are
scored in turn and timed: the predictions move to the thread only when they take a large
share of a chunk's time. When they do not, the spare core writes the output instead
(:meth:`.output.OutputFile.write`); both at once would put three threads on two cores and
make each wait for Python's lock.

Only chunks of plain rows of numbers (the matrix door, :func:`.scoring.numbers_of`) are
overlapped; any other chunk is scored in turn by :func:`.scoring.score`, with the same
answers.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Iterator, Mapping

from ..api import Model
from .instances import InstanceConfig
from .reading import Chunk
from .scoring import Numbers, Scored, numbers_of, numbers_scored, predicted, score

TIMED_CHUNKS = 4
"""Chunks of numbers scored in turn and timed before deciding whether to overlap."""

OVERLAP_SHARE = 0.2
"""The share of a chunk's time (parse, predict, print) the predictions must take for them to
move to their own thread."""


class InOrder:
    """``for scored in InOrder(model, ...).scored(chunks)``: each chunk scored as
    :func:`.scoring.score` scores it, in order."""

    def __init__(self, model: Model, parameters: Mapping[str, Any], config: InstanceConfig,
                 explain: bool = False) -> None:
        self.model = model
        self.parameters = parameters
        self.config = config
        self.explain = explain
        self.spare_core = _cores() > 1
        """Whether this process may run on more than one core."""
        self.overlapping = False
        """Whether the predictions of chunks of numbers run on their own thread (decided
        once :data:`TIMED_CHUNKS` of them were timed)."""
        self._timed = 0
        self._predicting = 0.0
        self._total = 0.0

    @property
    def core_to_spare(self) -> bool:
        """Whether a core is left for writing the output beside the scoring."""
        return self.spare_core and not self.overlapping

    def scored(self, chunks: Iterable[Chunk]) -> Iterator[Scored]:
        """*chunks* scored, in order.

        :raises CannotExplain: the job explains, and the model does not explain.
        """
        with ThreadPoolExecutor(1, thread_name_prefix="flask-predict-job") as thread:
            pending: tuple[Numbers, Future[Any]] | None = None
            for chunk in chunks:
                started = time.perf_counter()
                numbers = numbers_of(self.model, chunk, self.parameters, self.config,
                                     self.explain)
                if numbers is not None and self.overlapping:
                    future = thread.submit(predicted, self.model, numbers.matrix)
                    if pending is not None:
                        yield self._finished(*pending)
                    pending = (numbers, future)
                    continue
                if pending is not None:
                    yield self._finished(*pending)
                    pending = None
                if numbers is None:
                    yield score(self.model, chunk, self.parameters, self.config, self.explain)
                else:
                    yield self._timed_scored(numbers, started)
            if pending is not None:
                yield self._finished(*pending)

    def _finished(self, numbers: Numbers, predictions: Future[Any]) -> Scored:
        return numbers_scored(self.model, numbers, predictions.result(), self.parameters,
                              self.config)

    def _timed_scored(self, numbers: Numbers, started: float) -> Scored:
        """*numbers* scored on this thread (*started*: when its parse began), timed while
        the decision is open."""
        predicting = time.perf_counter()
        predictions = predicted(self.model, numbers.matrix)
        printing = time.perf_counter()
        scored = numbers_scored(self.model, numbers, predictions, self.parameters, self.config)
        if predictions is not None and self.spare_core and self._timed < TIMED_CHUNKS:
            self._predicting += printing - predicting
            self._total += time.perf_counter() - started
            self._timed += 1
            if self._timed == TIMED_CHUNKS:
                self.overlapping = self._predicting >= OVERLAP_SHARE * self._total
        return scored


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
