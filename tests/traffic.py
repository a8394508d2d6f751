"""Requests in a loop on another thread while a test changes the server under them."""

from __future__ import annotations

import threading
from typing import Any, Callable


class Traffic:
    """Calls each of *senders* in turn, over and over, until the ``with`` block ends; keeps
    every answer, a ``(status, detail)`` pair."""

    def __init__(self, *senders: Callable[[], tuple[int, Any]]) -> None:
        self.senders = senders
        self.answers: list[tuple[int, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            for send in self.senders:
                self.answers.append(send())

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    @property
    def failed(self) -> list[tuple[int, Any]]:
        """The answers that were not 200."""
        return [answer for answer in self.answers if answer[0] != 200]
