"""Per-model time limits (flask_predict.runtime.deadline): every protocol answers its timeout error
and the app goes on serving."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_predict.runtime import deadline
from flask_predict.errors import ConfigError, DeadlineExceeded
from tests.conftest import AppFactory
from tests.models import make_sleepy, sleepy_config


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sleepy(tmp_path_factory.mktemp("sleepy") / "sleepy")


@pytest.fixture(scope="module")
def app(make_app: AppFactory, sleepy: Path) -> Flask:
    """``limited`` stops after 0.3 s (its own setting), ``slow`` after 0.5 s (the app's)."""
    return make_app({"limited": sleepy_config(sleepy, timeout_seconds=0.3),
                     "slow": sleepy_config(sleepy)}, timeout_seconds=0.5)


def test_a_sleeping_call_is_cut_short() -> None:
    with pytest.raises(DeadlineExceeded, match="'m' did not answer within its time limit"):
        with deadline.limit(0.2, "m"):
            time.sleep(30)


def test_a_python_loop_is_cut_short() -> None:
    with pytest.raises(DeadlineExceeded):
        with deadline.limit(0.2, "m"):
            end = time.monotonic() + 30
            while time.monotonic() < end:
                pass


def test_a_predictor_catching_exception_cannot_swallow_it() -> None:
    with pytest.raises(DeadlineExceeded):
        with deadline.limit(0.2, "m"):
            try:
                time.sleep(30)
            except Exception:  # what a careless predictor does
                pass


def test_native_code_is_not_interrupted_and_the_limit_still_holds() -> None:
    """Inside ``native()`` the timer only takes note; the error comes when the block ends."""
    finished = []
    with pytest.raises(DeadlineExceeded):
        with deadline.limit(0.2, "m"):
            with deadline.native() as seconds:
                assert seconds is not None and 0 < seconds <= 0.2
                time.sleep(0.5)  # stands for a native call bounding itself by *seconds*
                finished.append(True)
    assert finished == [True]
    with deadline.native() as seconds:  # outside a limit: nothing to bound
        assert seconds is None


def test_the_timer_and_handler_are_restored() -> None:
    def mine(signum: int, frame: Any) -> None:
        raise AssertionError("the caller's handler ran")

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        with deadline.limit(5, "m"):
            assert deadline.remaining() is not None
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert deadline.remaining() is None
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_over_the_default_handler_ours_stays_and_ignores_a_stray_alarm() -> None:
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    try:
        with deadline.limit(5, "m"):
            pass
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        kept = signal.getsignal(signal.SIGALRM)
        assert kept not in (signal.SIG_DFL, signal.SIG_IGN, None)
        signal.raise_signal(signal.SIGALRM)  # outside a call: nothing happens
        with deadline.limit(5, "m"):  # the next call reuses it
            assert signal.getsignal(signal.SIGALRM) is kept
        with pytest.raises(DeadlineExceeded):
            with deadline.limit(0.1, "m"):
                time.sleep(2)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_no_limit_outside_the_main_thread() -> None:
    """Signals reach only the main thread: elsewhere the call runs to its end."""
    outcome: list[object] = []

    def call() -> None:
        try:
            with deadline.limit(0.05, "m"):
                assert deadline.remaining() is None
                time.sleep(0.3)
            outcome.append("finished")
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    assert outcome == ["finished"]


def test_an_armed_timer_of_someone_else_is_left_alone() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with deadline.limit(0.05, "m"):
            time.sleep(0.1)
        time.sleep(0.5)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_models_zero_is_no_limit_under_the_apps(make_app: AppFactory, sleepy: Path) -> None:
    """A model's ``timeout_seconds: 0`` is no limit, not "unset": the app's 0.3 s does not
    apply to it; a model that sets nothing takes the app's."""
    app = make_app({"unlimited": sleepy_config(sleepy, timeout_seconds=0),
                    "default": sleepy_config(sleepy)}, timeout_seconds=0.3)
    client = app.test_client()
    answer = client.post("/v1/projects/p/models/unlimited:predict",
                         json={"instances": [{"sleep": 0.6}]})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    answer = client.post("/v1/projects/p/models/default:predict",
                         json={"instances": [{"sleep": 30}]})
    assert answer.status_code == 504


@pytest.mark.parametrize("timeout", [-1, "soon", True])
def test_bad_limits_are_refused(make_app: AppFactory, sleepy: Path, timeout: object) -> None:
    with pytest.raises(ConfigError, match="timeout_seconds"):
        make_app({"m": sleepy_config(sleepy, timeout_seconds=timeout)})
    with pytest.raises(ConfigError, match="PREDICT_TIMEOUT_SECONDS"):
        make_app({"m": sleepy_config(sleepy)}, timeout_seconds=timeout)


@pytest.mark.parametrize("model", ["limited", "slow"])
def test_aiplatform_answers_504_then_serves(app: Flask, model: str) -> None:
    client = app.test_client()
    answer = client.post(f"/v1/projects/p/models/{model}:predict",
                         json={"instances": [{"sleep": 30}]})
    assert answer.status_code == 504
    assert "did not answer within its time limit" in answer.get_json()["error"]
    answer = client.post(f"/v1/projects/p/models/{model}:predict",
                         json={"instances": [{"spin": 30}], "swallow": True})
    assert answer.status_code == 504
    answer = client.post(f"/v1/projects/p/models/{model}:predict", json={"instances": [{}]})
    assert answer.status_code == 200


def test_tfserving_answers_504(app: Flask) -> None:
    answer = app.test_client().post("/v1/models/limited:predict",
                                    json={"instances": [{"sleep": 30}]})
    assert answer.status_code == 504, answer.get_data(as_text=True)
    assert "time limit" in answer.get_json()["error"]


def test_kserve_v2_answers_504(app: Flask) -> None:
    body = {"inputs": [{"name": "sleep", "shape": [1], "datatype": "FP64", "data": [30]},
                       {"name": "spin", "shape": [1], "datatype": "FP64", "data": [0]}]}
    answer = app.test_client().post("/v2/models/limited/infer", json=body)
    assert answer.status_code == 504, answer.get_data(as_text=True)
    assert "time limit" in answer.get_json()["error"]


def test_grps_answers_504_in_its_envelope(app: Flask) -> None:
    body = {"model": "limited", "ndarray": [[30, 0]]}
    answer = app.test_client().post("/grps/v1/infer/predict", json=body)
    assert answer.status_code == 504, answer.get_data(as_text=True)
    status = answer.get_json()["status"]
    assert (status["code"], status["status"]) == (504, "FAILURE")


def test_the_raw_handler_look_up_agrees_with_signals_own() -> None:
    def mine(signum: int, frame: Any) -> None:
        pass

    for handler in (mine, signal.SIG_DFL, signal.SIG_IGN):
        previous = signal.signal(signal.SIGALRM, handler)
        try:
            assert deadline._getsignal(signal.SIGALRM) == signal.getsignal(signal.SIGALRM)
        finally:
            signal.signal(signal.SIGALRM, previous)


def test_a_limit_without_seconds_arms_nothing() -> None:
    with deadline.limit(None, "m"):
        assert deadline.remaining() is None
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_error_in_the_body_passes_and_disarms() -> None:
    with pytest.raises(KeyError):
        with deadline.limit(5, "m"):
            raise KeyError("x")
    assert deadline.remaining() is None
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# --- the timer kept armed between calls (a worker of the packaged server) -----------------

@pytest.fixture()
def kept_armed() -> Any:
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    deadline.keep_timer_armed()
    try:
        yield
    finally:
        deadline.keep_timer_armed(False)
        signal.signal(signal.SIGALRM, previous)


def armed_seconds() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


@pytest.mark.usefixtures("kept_armed")
def test_kept_armed_a_call_leaves_the_timer_armed_and_the_next_arms_nothing() -> None:
    with deadline.limit(5, "m"):
        first = armed_seconds()
        assert 0 < first <= 5
    assert 0 < armed_seconds() <= first, "still armed after the call"
    time.sleep(0.2)
    with deadline.limit(5, "m"):
        # armed again, it would read about 5 s; left alone, at least 0.2 s less than first
        assert armed_seconds() <= first - 0.19, "the earlier timer goes off first"
        assert 4 < deadline.remaining() <= 5  # type: ignore[operator]
    signal.raise_signal(signal.SIGALRM)  # outside a call: ignored
    assert deadline.remaining() is None


@pytest.mark.usefixtures("kept_armed")
def test_kept_armed_a_shorter_limit_arms_the_timer_again() -> None:
    with deadline.limit(5, "m"):
        pass
    with deadline.limit(0.5, "m"):
        assert 0 < armed_seconds() <= 0.5, "armed again for the shorter limit"


@pytest.mark.usefixtures("kept_armed")
def test_kept_armed_a_timer_armed_for_an_earlier_call_is_armed_again_for_the_rest() -> None:
    with deadline.limit(0.2, "m"):
        pass
    with deadline.limit(5, "m"):
        time.sleep(0.5)  # the timer goes off at 0.2 s: not this call's limit
        assert armed_seconds() > 0.5, "armed again for the rest of this call"
    started = time.monotonic()
    with deadline.limit(0.2, "m"):
        pass
    with pytest.raises(DeadlineExceeded):
        with deadline.limit(0.4, "m"):
            time.sleep(30)
    assert 0.39 < time.monotonic() - started < 20, "this call's own limit, not the earlier"


@pytest.mark.usefixtures("kept_armed")
def test_kept_armed_a_timer_going_off_between_calls_is_ignored_and_armed_again() -> None:
    with deadline.limit(0.1, "m"):
        pass
    time.sleep(0.3)  # the timer goes off here, outside any call
    assert armed_seconds() == 0
    with pytest.raises(DeadlineExceeded):
        with deadline.limit(0.1, "m"):
            time.sleep(2)
    with deadline.native():  # no call: nothing to bound
        pass


@pytest.mark.usefixtures("kept_armed")
def test_kept_armed_other_threads_still_run_without_a_limit() -> None:
    test_no_limit_outside_the_main_thread()


def test_going_back_from_kept_armed_disarms() -> None:
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    try:
        deadline.keep_timer_armed()
        with deadline.limit(5, "m"):
            pass
        assert armed_seconds() > 0
        deadline.keep_timer_armed(False)
        assert armed_seconds() == 0
        with deadline.limit(5, "m"):
            pass
        assert armed_seconds() == 0, "one timer per call again"
    finally:
        deadline.keep_timer_armed(False)
        signal.signal(signal.SIGALRM, previous)


def test_the_error_says_where_the_predictor_stopped() -> None:
    """For the log's one line (the client never reads it): the innermost frame of the
    predictor's own code, not this module's nor contextlib's."""
    def predictor_code() -> None:
        time.sleep(30)

    with pytest.raises(DeadlineExceeded) as caught:
        with deadline.limit(0.2, "m"):
            predictor_code()
    line = predictor_code.__code__.co_firstlineno + 1
    assert caught.value.stopped_at == f"{__file__}:{line} in predictor_code"
    assert caught.value.detail == f" (stopped at {__file__}:{line} in predictor_code)"
    assert caught.value.message == "model 'm' did not answer within its time limit of 0.2 s"
    assert not caught.value.log_traceback
