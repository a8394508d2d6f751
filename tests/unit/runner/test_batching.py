"""The batch scheduler with a real numpy run function: callers with different keys and row
counts only ever get their own rows back, in order, padding removed; the row cap, the
queue's limit, deadlines, a failing run, splitting and a draining shutdown. Every wait is
on an event the scheduler or the run function sets, never on a clock."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flask_predict.errors import (Code, DeadlineExceeded, FailedPrecondition, InvalidInput,
                                  PredictError)
from flask_predict.runner.batch_stats import BatchStats, per_version
from flask_predict.runner.batchers import Batchers
from flask_predict.runner.batching import (BatchKey, BatchScheduler, QueueFull,
                                           SchedulerClosed)
from flask_predict.settings.batching import BatchingParameters

LONG = 60_000_000
"""A batch timeout (micros) no test waits for: such a batch runs when full or at close."""
KEY = BatchKey.of("m", 1, "serving_default")


def echo(key: BatchKey, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A model of rows: each output row is computed from its own input row only, and says
    which key's batch produced it."""
    x = inputs["x"]
    outputs = {"double": x * 2, "key": np.full(len(x), hash(key) % 1000, np.int64)}
    return {name: outputs[name] for name in key.outputs or outputs}


class Recorder:
    """A run function that records each batch, and may hold a batch until released."""

    def __init__(self, run: Callable[..., Any] = echo, hold: bool = False) -> None:
        self.run, self.batches = run, []  # type: ignore[var-annotated]
        self.started = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def __call__(self, key: BatchKey, inputs: dict[str, np.ndarray]) -> Mapping[str, Any]:
        self.batches.append({name: array.copy() for name, array in inputs.items()})
        self.started.set()
        assert self.release.wait(30)
        return self.run(key, inputs)  # type: ignore[no-any-return]


class Queued:
    """An observer that sets an event once *count* requests have joined a queue."""

    def __init__(self, count: int) -> None:
        self.count, self.seen, self.event = count, 0, threading.Event()
        self.lock = threading.Lock()
        self.stats = BatchStats()

    def queued(self, key: BatchKey, rows: int) -> None:
        with self.lock:
            self.seen += 1
            if self.seen >= self.count:
                self.event.set()

    def refused(self, key: BatchKey, reason: str) -> None:
        self.stats.refused(key, reason)

    def executed(self, key: BatchKey, rows: int, padded: int, waits: Any) -> None:
        self.stats.executed(key, rows, padded, waits)


def params(**values: Any) -> BatchingParameters:
    return BatchingParameters(**{"num_batch_threads": 1, "batch_timeout_micros": LONG,
                                 **values})


@pytest.fixture
def make() -> Iterator[Callable[..., BatchScheduler]]:
    made: list[BatchScheduler] = []

    def make(parameters: BatchingParameters, run: Any = echo, observer: Any = None
             ) -> BatchScheduler:
        made.append(BatchScheduler(parameters, run, observer))
        return made[-1]

    yield make
    for scheduler in made:
        scheduler.close()


def rows(caller: int, count: int, width: int = 2) -> np.ndarray:
    """*count* rows, each carrying its caller and its own index."""
    return np.array([[caller, index] + [0] * (width - 2) for index in range(count)],
                    dtype=np.float64)


def in_threads(*calls: Callable[[], Any]) -> list[Any]:
    """Each call on its own thread; results (or raised errors) in order."""
    def guarded(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(guarded, calls))


def test_requests_of_one_key_share_a_batch_and_get_their_own_rows(make: Any) -> None:
    run = Recorder()
    scheduler = make(params(max_batch_size=5), run)
    first, second = in_threads(lambda: scheduler.submit(KEY, {"x": rows(1, 2)}),
                               lambda: scheduler.submit(KEY, {"x": rows(2, 3)}))
    assert len(run.batches) == 1 and run.batches[0]["x"].shape == (5, 2)
    np.testing.assert_array_equal(first["double"], rows(1, 2) * 2)
    np.testing.assert_array_equal(second["double"], rows(2, 3) * 2)


def test_the_cap_counts_rows_and_a_larger_request_is_refused(make: Any) -> None:
    run = Recorder()
    scheduler = make(params(max_batch_size=3), run)
    results = in_threads(*(lambda caller=caller: scheduler.submit(KEY, {"x": rows(caller, 1)})
                           for caller in range(6)))
    assert sorted(len(batch["x"]) for batch in run.batches) == [3, 3]
    for caller, result in enumerate(results):
        np.testing.assert_array_equal(result["double"], rows(caller, 1) * 2)
    with pytest.raises(InvalidInput, match="Task size 4 is larger than maximum batch size 3"):
        scheduler.submit(KEY, {"x": rows(9, 4)})


def test_keys_never_share_a_batch(make: Any) -> None:
    run = Recorder()
    scheduler = make(params(max_batch_size=2), run)
    other = BatchKey.of("m", 1, "serving_default", outputs=["double"])
    got = in_threads(lambda: scheduler.submit(KEY, {"x": rows(1, 1)}),
                     lambda: scheduler.submit(other, {"x": rows(2, 1)}),
                     lambda: scheduler.submit(KEY, {"x": rows(3, 1)}),
                     lambda: scheduler.submit(other, {"x": rows(4, 1)}))
    assert set(got[1]) == set(got[3]) == {"double"} and set(got[0]) == {"double", "key"}
    for batch in run.batches:
        callers = set(batch["x"][:, 0])
        assert callers in ({1.0, 3.0}, {2.0, 4.0})


def test_other_dimensions_keep_requests_apart_unless_padded(make: Any) -> None:
    run, observer = Recorder(), Queued(2)
    scheduler = make(params(max_batch_size=2), run, observer)
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(scheduler.submit, KEY, {"x": rows(1, 1, 2)}),
                 pool.submit(scheduler.submit, KEY, {"x": rows(2, 1, 3)})]
        assert observer.event.wait(30)
        scheduler.close()  # neither batch is full: the close runs both
        wide = calls[1].result()
    assert sorted(batch["x"].shape for batch in run.batches) == [(1, 2), (1, 3)]
    np.testing.assert_array_equal(wide["double"], rows(2, 1, 3) * 2)


def test_variable_lengths_are_padded_with_each_inputs_first_value(make: Any) -> None:
    run = Recorder(run=lambda key, inputs: {"x": inputs["x"]})
    scheduler = make(params(max_batch_size=3, pad_variable_length_inputs=True), run)
    short = np.array([[7, 8]], np.int32)
    long = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    got_short, got_long = in_threads(lambda: scheduler.submit(KEY, {"x": short}),
                                     lambda: scheduler.submit(KEY, {"x": long}))
    assert len(run.batches) == 1
    np.testing.assert_array_equal(got_short["x"], [[7, 8, 7]])
    np.testing.assert_array_equal(got_long["x"], long)


def test_padding_to_an_allowed_size_copies_the_first_row_and_is_removed(make: Any) -> None:
    run = Recorder()
    scheduler = make(params(max_batch_size=8, allowed_batch_sizes=(4, 8),
                            batch_timeout_micros=0), run)
    result = scheduler.submit(KEY, {"x": rows(5, 3)})
    np.testing.assert_array_equal(run.batches[0]["x"], np.concatenate([rows(5, 3),
                                                                        rows(5, 1)]))
    np.testing.assert_array_equal(result["double"], rows(5, 3) * 2)


def test_splitting_a_large_request_across_batches(make: Any) -> None:
    run, observer = Recorder(), Queued(2)
    scheduler = make(params(max_batch_size=100, enable_large_batch_splitting=True,
                            max_execution_batch_size=4, allowed_batch_sizes=(2, 4)), run,
                     observer)
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(scheduler.submit, KEY, {"x": rows(1, 1)}),
                 pool.submit(scheduler.submit, KEY, {"x": rows(2, 10)})]
        assert observer.event.wait(30)
        scheduler.close()  # the last batch is not full: the close runs it
        first, big = (call.result() for call in calls)
    assert all(len(batch["x"]) <= 4 for batch in run.batches)
    assert sum(len(batch["x"]) for batch in run.batches) in (12, 14)
    np.testing.assert_array_equal(first["double"], rows(1, 1) * 2)
    np.testing.assert_array_equal(big["double"], rows(2, 10) * 2)


def test_a_full_queue_answers_unavailable_at_once(make: Any) -> None:
    run = Recorder(hold=True)
    observer = Queued(2)
    scheduler = make(params(max_batch_size=2, max_enqueued_batches=1), run, observer)
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(scheduler.submit, KEY, {"x": rows(1, 2)})
        assert run.started.wait(30)  # that batch runs; the queue holds one open batch
        waiting = pool.submit(scheduler.submit, KEY, {"x": rows(2, 2)})
        assert observer.event.wait(30)
        with pytest.raises(QueueFull) as caught:
            scheduler.submit(KEY, {"x": rows(3, 1)})
        assert caught.value.code is Code.UNAVAILABLE and caught.value.http_status == 503
        assert "queue to which this task was submitted is full" in caught.value.message
        run.release.set()
        assert running.result()["double"].tolist() == (rows(1, 2) * 2).tolist()
        assert waiting.result()["double"].tolist() == (rows(2, 2) * 2).tolist()
    assert observer.stats.snapshot().refused == {"full": 1}


def test_no_more_batches_run_at_once_than_batch_threads(make: Any) -> None:
    run = Recorder(hold=True)
    observer = Queued(2)
    scheduler = make(params(max_batch_size=1), run, observer)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(scheduler.submit, KEY, {"x": rows(1, 1)})
        assert run.started.wait(30)  # the caller runs its full batch itself
        second = pool.submit(scheduler.submit, KEY, {"x": rows(2, 1)})
        assert observer.event.wait(30)
        assert scheduler.queued_requests() == 1  # full too, but the one thread is taken
        run.release.set()
        first.result(), second.result()
    assert [batch["x"][0, 0] for batch in run.batches] == [1.0, 2.0]


def test_a_deadline_shorter_than_the_batch_timeout(make: Any) -> None:
    run = Recorder()
    scheduler = make(params(max_batch_size=3), run)
    with pytest.raises(DeadlineExceeded, match="deadline passed while it waited"):
        scheduler.submit(KEY, {"x": rows(1, 2)}, deadline=time.monotonic() + 0.05)
    assert scheduler.queued_requests() == 0  # taken out of its batch
    result = scheduler.submit(KEY, {"x": rows(2, 3)})  # fills a batch on its own
    assert len(run.batches) == 1 and set(run.batches[0]["x"][:, 0]) == {2.0}
    np.testing.assert_array_equal(result["double"], rows(2, 3) * 2)


def test_a_request_expires_while_another_batch_runs(make: Any) -> None:
    run = Recorder(hold=True)
    scheduler = make(params(max_batch_size=1), run)
    with ThreadPoolExecutor(2) as pool:
        busy = pool.submit(scheduler.submit, KEY, {"x": rows(1, 1)})
        assert run.started.wait(30)
        expired = pool.submit(scheduler.submit, KEY, {"x": rows(2, 1)},
                              time.monotonic() + 0.02)
        with pytest.raises(DeadlineExceeded):
            expired.result()
        run.release.set()
        busy.result()
    scheduler.close()
    assert [set(batch["x"][:, 0]) for batch in run.batches] == [{1.0}]


def test_a_run_that_raises_fails_every_caller_of_its_batch(make: Any) -> None:
    def broken(key: BatchKey, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise RuntimeError("the model broke")

    scheduler = make(params(max_batch_size=2), broken)
    errors = in_threads(lambda: scheduler.submit(KEY, {"x": rows(1, 1)}),
                        lambda: scheduler.submit(KEY, {"x": rows(2, 1)}))
    assert all(isinstance(error, RuntimeError) for error in errors)
    np.testing.assert_array_equal(  # the thread lives on
        make(params(max_batch_size=1)).submit(KEY, {"x": rows(3, 1)})["double"], rows(3, 1) * 2)


@pytest.mark.parametrize(("outputs", "message"), [
    ({"y": np.float64(1.0)}, "Batched output tensor has 0 dimensions"),
    ({"y": np.zeros(3)}, "Batched output tensor's 0th dimension does not equal the sum"),
])
def test_outputs_without_the_batchs_rows_fail_as_in_tf_serving(
        make: Any, outputs: dict[str, Any], message: str) -> None:
    scheduler = make(params(max_batch_size=2, batch_timeout_micros=0),
                     lambda key, inputs: outputs)
    with pytest.raises(FailedPrecondition, match=message):
        scheduler.submit(KEY, {"x": rows(1, 2)})


@pytest.mark.parametrize(("inputs", "message"), [
    ({}, "must have at least one input tensor"),
    ({"x": np.float64(1)}, "must have at least one dimension"),
    ({"x": np.zeros((2, 1)), "y": np.zeros((3, 1))}, "must have equal 0th-dimension size"),
])
def test_inputs_without_one_row_count_are_refused(make: Any, inputs: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        make(params()).submit(KEY, inputs)


def test_shutdown_runs_the_queued_batches_then_the_threads_exit(make: Any) -> None:
    run = Recorder(hold=True)
    observer = Queued(3)
    scheduler = make(params(max_batch_size=2), run, observer)
    with ThreadPoolExecutor(3) as pool:
        calls = [pool.submit(scheduler.submit, KEY, {"x": rows(caller, 1)})
                 for caller in range(3)]
        assert observer.event.wait(30) and run.started.wait(30)
        scheduler.close(wait=False)
        with pytest.raises(SchedulerClosed) as caught:
            scheduler.submit(KEY, {"x": rows(9, 1)})
        assert caught.value.code is Code.UNAVAILABLE
        run.release.set()
        scheduler.close()
        for caller, call in enumerate(calls):
            np.testing.assert_array_equal(call.result()["double"], rows(caller, 1) * 2)
    assert not any(thread.is_alive() for thread in scheduler._threads)
    assert sum(len(batch["x"]) for batch in run.batches) == 3


def test_close_waits_for_a_batch_its_caller_runs(make: Any) -> None:
    run = Recorder(hold=True)
    scheduler = make(params(max_batch_size=1, num_batch_threads=2), run)
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(scheduler.submit, KEY, {"x": rows(1, 1)})
        assert run.started.wait(30)  # the caller runs it; the batch threads have nothing
        closer = threading.Thread(target=scheduler.close)
        closer.start()
        closer.join(0.2)
        assert closer.is_alive()  # still running: close waits for it
        run.release.set()
        closer.join()
        assert call.result()["double"].tolist() == (rows(1, 1) * 2).tolist()


def test_stats_count_rows_waits_and_executions_per_key(make: Any) -> None:
    stats = BatchStats()
    scheduler = make(params(max_batch_size=4, allowed_batch_sizes=(4,)), echo, stats)
    in_threads(lambda: scheduler.submit(KEY, {"x": rows(1, 1)}),
               lambda: scheduler.submit(KEY, {"x": rows(2, 3)}))
    scheduler.submit(BatchKey.of("m", 1, "serving_default", outputs=["key"]),
                     {"x": rows(3, 4)})
    snapshot = stats.snapshot()
    assert snapshot.executions[KEY] == 1 and snapshot.rows[KEY] == 4
    assert per_version(snapshot.executions) == {("m", 1): 2}
    assert snapshot.batch_rows.cumulative()[2] == (4, 2) and snapshot.padding_rows == 0
    assert snapshot.queue_seconds.cumulative()[-1][1] == 3


def test_one_scheduler_per_set_of_parameters() -> None:
    run = Recorder()
    batchers = Batchers(run)
    small, large = params(max_batch_size=1), params(max_batch_size=3)
    assert batchers.scheduler(small) is batchers.scheduler(params(max_batch_size=1))
    assert batchers.scheduler(small) is not batchers.scheduler(large)
    got = batchers.submit(small, KEY, {"x": rows(1, 1)})
    np.testing.assert_array_equal(got["double"], rows(1, 1) * 2)
    batchers.close()
    with pytest.raises(SchedulerClosed):
        batchers.submit(large, KEY, {"x": rows(2, 1)})


CALLERS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 7), st.integers(2, 3),
                             st.sampled_from([None, None, 0.0005, 0.005])),
                   min_size=1, max_size=12)
"""Each caller: its key, its rows and their width (callers of another width batch apart),
and how long it waits at most (``None``: no deadline)."""
KEYS = [BatchKey.of("m", 1, "a"), BatchKey.of("m", 1, "a", outputs=["double"]),
        BatchKey.of("m", 2, "a", parameters={"t": 1})]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(callers=CALLERS, cap=st.integers(1, 8), split=st.booleans(), pad=st.booleans(),
       threads=st.integers(1, 3), timeout=st.sampled_from([0, 200, 5000]))
def test_concurrent_callers_only_ever_get_their_own_rows(
        callers: list[tuple[int, int, int, float | None]], cap: int, split: bool, pad: bool,
        threads: int, timeout: int) -> None:
    allowed = tuple(sorted({max(1, cap // 2), cap})) if pad else ()
    largest = max(caller[1] for caller in callers)
    lock, running, most = threading.Lock(), [0], [0]

    def counted(key: BatchKey, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            assert len(inputs["x"]) <= cap
            return echo(key, inputs)
        finally:
            with lock:
                running[0] -= 1

    scheduler = BatchScheduler(BatchingParameters(
        max_batch_size=max(cap, largest) if split else cap, batch_timeout_micros=timeout,
        num_batch_threads=threads, allowed_batch_sizes=allowed, max_enqueued_batches=1000,
        enable_large_batch_splitting=split, max_execution_batch_size=cap), counted)
    try:
        def call(caller: int, key: BatchKey, count: int, width: int,
                 wait: float | None) -> Any:
            deadline = None if wait is None else time.monotonic() + wait
            try:
                return scheduler.submit(key, {"x": rows(caller, count, width)}, deadline)
            except PredictError as exc:
                return exc

        with ThreadPoolExecutor(len(callers)) as pool:
            answers = list(pool.map(lambda item: call(item[0], KEYS[item[1][0]], *item[1][1:]),
                                    enumerate(callers)))
    finally:
        scheduler.close()
    assert most[0] <= threads  # callers that run their own batch count among the threads
    for caller, ((key_index, count, width, wait), answer) in enumerate(zip(callers, answers)):
        key = KEYS[key_index]
        if count > cap and not split:
            assert isinstance(answer, InvalidInput)
            continue
        if wait is not None and isinstance(answer, DeadlineExceeded):
            continue  # answered in time, or told it was not: never another's rows
        assert set(answer) == set(key.outputs or ("double", "key"))
        np.testing.assert_array_equal(answer["double"], rows(caller, count, width) * 2)
        if "key" in answer:
            assert answer["key"].tolist() == [hash(key) % 1000] * count
