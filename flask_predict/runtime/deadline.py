"""Time limits on predictor calls: answer ``DEADLINE_EXCEEDED`` before the server gives up.

A sync gunicorn worker that spends longer than its ``timeout`` on one request is killed by
the master: the client gets no answer and the worker reloads every model. A model's
``timeout_seconds`` (or ``PREDICT_TIMEOUT_SECONDS`` for all models) bounds each predictor
call instead: when it runs out, :class:`~flask_predict.errors.DeadlineExceeded` reaches the
protocol's error handler (HTTP 504) and the worker goes on serving.

The limit is a ``SIGALRM`` timer (``signal.setitimer``) whose handler raises into the
predictor's Python code. That works only

- in the main thread (gunicorn's sync workers run every request there; a threaded server
  runs the call without a limit), and only when no other ``ITIMER_REAL`` timer is set;
- at the next Python bytecode: native code that never returns to the interpreter (one long
  BLAS call, a TensorFlow kernel, a C extension's loop) finishes first, and the answer comes
  when it returns. Such code can bound itself inside :func:`native` (the TensorFlow plugin
  passes the time left to ``RunOptions.timeout_in_ms``).

Over the default ``SIGALRM`` action the handler stays installed between calls (it ignores a
signal that arrives outside one), which saves two system calls a call; a handler someone
else set is put back after each call.

In a worker of the packaged server, whose signals and timers are the server's own
(:func:`keep_timer_armed`), the timer also stays armed between calls. A call whose limit ends
after the armed timer goes off arms nothing: when the timer goes off before the call's own
deadline, the handler arms it again for the rest. Calls one after another then make no system
call at all (three before: one to check that no other timer is set, one to arm, one to
disarm); the timer goes off about once per limit's length, during a call or between calls.

The exception raised into the predictor derives from ``BaseException``, so a predictor's own
``except Exception`` cannot swallow it; ``finally`` blocks and ``with`` statements in the
predictor still run.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any, Callable

from ..errors import DeadlineExceeded
from ..types import ModelSpec

logger = logging.getLogger(__name__)

_deadline: float | None = None
"""``time.monotonic()`` by which the call running in the main thread must end."""
_native = False
"""The main thread is inside :func:`native`: the timer must not raise there."""
_expired = False
"""The timer went off inside :func:`native`."""
_keep_armed = False
"""Set by :func:`keep_timer_armed`: the timer stays armed between calls."""
_main_ident: int | None = None
"""The main thread's ident, while the timer is kept armed."""
_fires_at: float | None = None
"""While the timer is kept armed: ``time.monotonic()`` when it goes off (``None``: not
armed)."""
EARLY = 0.001
"""Seconds before a call's deadline that a timer going off counts as armed for an earlier
call (and is armed again for the rest) rather than as this call's timeout."""


class _Expired(BaseException):
    """Raised by the timer into the predictor; turned into :class:`DeadlineExceeded`."""


def keep_timer_armed(keep: bool = True) -> None:
    """Keep the timer armed between calls (see the module's notes): for a process whose
    ``SIGALRM`` and ``ITIMER_REAL`` nothing else uses, a worker of the packaged server.
    ``keep=False`` disarms it and goes back to arming one timer per call."""
    global _keep_armed, _main_ident, _fires_at
    _keep_armed, _main_ident = keep, threading.main_thread().ident if keep else None
    if _fires_at is not None:
        _fires_at = None
        signal.setitimer(signal.ITIMER_REAL, 0)


def seconds_for(spec: ModelSpec, default: float | None) -> float | None:
    """The limit of a call into model *spec*: its ``timeout_seconds``, else *default* (the
    app's ``PREDICT_TIMEOUT_SECONDS``); ``None`` for no limit (either set to 0: a model's
    0 is no limit even where the app has one)."""
    limit = spec.timeout_seconds if spec.timeout_seconds is not None else default
    return limit or None


def remaining() -> float | None:
    """Seconds left to the predictor call running in this thread; ``None`` when it has no
    limit. For predictors that can bound native work themselves."""
    if _deadline is None or threading.current_thread() is not threading.main_thread():
        return None
    return max(0.0, _deadline - time.monotonic())


@contextmanager
def native() -> Iterator[float | None]:
    """Run native code that bounds itself with the seconds this yields (``None``: no limit).

    The timer does not raise inside the block, where an exception could land in the middle of
    an extension's own error handling; if it went off meanwhile and the block ended without
    an error, the limit's error is raised when the block ends."""
    global _native, _expired
    if remaining() is None:
        yield None
        return
    _native, _expired = True, False
    try:
        yield remaining()
    finally:
        _native = False
    if _expired:
        raise _Expired()


class limit:
    """Run the body for at most *seconds* (see the module's notes for where that holds);
    raise :class:`DeadlineExceeded` naming *model* when it runs out.

    A class, not a generator: a predictor call enters one per request."""

    __slots__ = ("seconds", "model", "_previous")

    def __init__(self, seconds: float | None, model: str) -> None:
        self.seconds = seconds
        self.model = model
        self._previous: Any = None
        """What :func:`_disarm` restores; ``None`` while no timer is armed."""

    def __enter__(self) -> None:
        global _deadline
        seconds = self.seconds
        if (_keep_armed and seconds and _deadline is None
                and threading.get_ident() == _main_ident):
            _start_kept_armed(seconds)
            self._previous = _KEPT
            return
        if not seconds or not _can_interrupt():
            if seconds:
                logger.debug("flask_predict: no time limit for %r outside the main thread",
                             self.model)
            return
        self._previous = _install_handler()
        _deadline = time.monotonic() + seconds
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        previous = self._previous
        if previous is None:
            return
        self._previous = None
        end = _end_call if previous is _KEPT else _disarm
        try:
            end(previous)
        except _Expired:  # the timer fired while disarming
            end(previous)
            kind = _Expired
        if kind is not None and issubclass(kind, _Expired):
            raise DeadlineExceeded(f"model {self.model!r} did not answer within its time "
                                   f"limit of {self.seconds:g} s", stopped_at(traceback)
                                   ) from None


def stopped_at(traceback: TracebackType | None) -> str:
    """``file:line in function`` of the innermost frame of *traceback* outside this module
    and ``contextlib``: where the limit stopped the predictor."""
    where = ""
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code.co_filename not in _OWN_FILES:
            where = f"{code.co_filename}:{traceback.tb_lineno} in {code.co_name}"
        traceback = traceback.tb_next
    return where


_OWN_FILES = frozenset({__file__, contextlib.__file__})


def _can_interrupt() -> bool:
    return (_SETITIMER
            and threading.get_ident() == threading.main_thread().ident
            and _deadline is None
            and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))


_SETITIMER = hasattr(signal, "setitimer")


def _raw_getsignal() -> Callable[[int], Any]:
    """``signal.getsignal`` without its conversion of the handler to an enum member, which
    for a function handler raises and catches a ``ValueError``: most of a limited call's
    cost. The default handler still compares equal to ``signal.SIG_DFL``."""
    try:
        raw: Callable[[int], Any] = importlib.import_module("_signal").getsignal
    except (ImportError, AttributeError):
        return signal.getsignal
    return raw


_getsignal = _raw_getsignal()


def _install_handler() -> Any:
    """Make :func:`_expire` the ``SIGALRM`` handler; what :func:`_disarm` restores after the
    call: nothing when the handler was already ours or the default one (``_expire`` ignores
    a signal outside a call, so it stays, and the next call skips two system calls), else
    the handler someone else set."""
    current = _getsignal(signal.SIGALRM)
    if current is _expire:
        return _KEEP
    signal.signal(signal.SIGALRM, _expire)
    return _KEEP if current in (signal.SIG_DFL, None) else current


_KEEP = object()
"""What :func:`_install_handler` returns when :func:`_expire` stays the handler."""
_KEPT = object()
"""A call's mark that the timer stays armed after it (:func:`keep_timer_armed`)."""


def _start_kept_armed(seconds: float) -> None:
    """Start a call of *seconds* while the timer is kept armed; the timer is armed only when
    it is not, or would go off after the call's deadline. The deadline is set first: a timer
    going off from then on is armed again for the rest of this call by the handler."""
    global _deadline, _fires_at
    now = time.monotonic()
    deadline = _deadline = now + seconds
    fires_at = _fires_at
    if fires_at is None or not now < fires_at <= deadline:
        if _getsignal(signal.SIGALRM) is not _expire:
            signal.signal(signal.SIGALRM, _expire)
        _fires_at = deadline
        signal.setitimer(signal.ITIMER_REAL, seconds)


def _end_call(previous: Any) -> None:
    global _deadline, _native, _expired
    _deadline, _native, _expired = None, False, False


def _disarm(previous: Any) -> None:
    global _fires_at
    _end_call(previous)
    _fires_at = None
    signal.setitimer(signal.ITIMER_REAL, 0)
    if previous is not _KEEP:
        signal.signal(signal.SIGALRM, previous)


def _expire(signum: int, frame: FrameType | None) -> None:
    global _expired, _fires_at
    deadline = _deadline
    if deadline is None:
        _fires_at = None
        return
    left = deadline - time.monotonic()
    if left > EARLY:  # armed for an earlier call's deadline: arm it for the rest of this one
        _fires_at = deadline
        signal.setitimer(signal.ITIMER_REAL, left)
        return
    if _native:
        _expired = True
    else:
        raise _Expired()
