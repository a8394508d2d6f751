"""How the service's door calls a predictor: holding the version's call lock (a wait for
another thread's call noted on the request's record), bounded by a gRPC client's deadline,
and a stream's items with a predictor's failure answered as the server's error."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from threading import Lock
from time import monotonic, perf_counter
from typing import Any, Callable

from ..errors import DeadlineExceeded, PredictError, PredictorFailed
from ..models.served import LoadedVersion
from ..request.record import RequestRecord
from ..runtime import deadline


def held_call(calls: Lock, record: RequestRecord | None, method: Callable[..., Any],
               args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> Any:
    """``method(*args, **kwargs)`` holding the version's call lock *calls*; a wait for
    another thread's call on the version (a gRPC thread's, say) is noted on the request's
    record (a trace's span)."""
    if not calls.acquire(False):
        started = perf_counter()
        calls.acquire()
        if record is not None:
            record.waited("busy", started)
    try:
        return method(*args, **(kwargs or {}))
    finally:
        calls.release()


def call_by(client_deadline: float, loaded: LoadedVersion, seconds: float | None, verb: str,
             method: Callable[..., Any], args: tuple[Any, ...],
             kwargs: Mapping[str, Any] | None, record: RequestRecord) -> Any:
    """A predictor call for a client that stops waiting at *client_deadline* (a gRPC call's
    deadline): the wait for the version is bounded by it, and so is the model's time limit
    *seconds*; a call whose client has given up by then is not made
    (``DEADLINE_EXCEEDED``)."""
    left = client_deadline - monotonic()
    calls = loaded.calls
    acquired = left > 0 and calls.acquire(False)
    if left > 0 and not acquired:
        started = perf_counter()
        acquired = calls.acquire(timeout=left)
        record.waited("busy", started)
    if not acquired:
        raise DeadlineExceeded(f"the client's deadline passed before model "
                               f"{loaded.name!r} could {verb}")
    try:
        with deadline.limit(left if seconds is None else min(seconds, left), loaded.name):
            return method(*args, **(kwargs or {}))
    finally:
        loaded.calls.release()


def streamed_items(loaded: LoadedVersion, items: Iterator[Any]) -> Iterator[list[Any]]:
    """Each item of a predictor's stream as one prediction; a predictor's failure
    mid-stream is the server's error."""
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except PredictError:
            raise
        except Exception as exc:
            raise PredictorFailed(f"model {loaded.name!r} failed while streaming") from exc
        yield [item]
