"""A batch job's progress on a terminal (rows, rows per second, time left), and its
summary at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import IO

EVERY_SECONDS = 0.5
"""How often the progress line is rewritten."""


@dataclass
class Summary:
    """What a job did."""

    output: str
    predictions: int = 0
    errors: int = 0
    blank: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        """Instances read: an output line each."""
        return self.predictions + self.errors

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        blank = f", {self.blank} blank lines skipped" if self.blank else ""
        return (f"{self.rows} instances: {self.predictions} predictions, {self.errors} errors"
                f"{blank}, in {self.seconds:.2f}s ({self.rate:,.0f} rows/s) -> {self.output}")


class Progress:
    """Counts a job's rows and, when *stream* is a terminal, shows them on one line that it
    rewrites (*total_bytes*, the input's size, gives the time left)."""

    def __init__(self, summary: Summary, stream: IO[str] | None,
                 total_bytes: int | None) -> None:
        self.summary = summary
        self._stream = stream if stream is not None and stream.isatty() else None
        self._total = total_bytes
        self._read = 0
        self._started = time.monotonic()
        self._shown = 0.0

    def add(self, predictions: int, errors: int, blank: int, read_bytes: int) -> None:
        summary = self.summary
        summary.predictions += predictions
        summary.errors += errors
        summary.blank += blank
        self._read += read_bytes
        now = time.monotonic()
        summary.seconds = now - self._started
        if self._stream is not None and now - self._shown >= EVERY_SECONDS:
            self._shown = now
            self._stream.write(f"\r{self.line()}\x1b[K")
            self._stream.flush()

    def line(self) -> str:
        """``1,200,000 rows, 85,000 rows/s, 0:12 left``."""
        summary = self.summary
        text = f"{summary.rows:,} rows, {summary.rate:,.0f} rows/s"
        if self._total and self._read and summary.seconds > 0:
            left = summary.seconds * (self._total - self._read) / self._read
            text += f", {int(left) // 60}:{int(left) % 60:02d} left"
        return text

    def done(self) -> Summary:
        self.summary.seconds = time.monotonic() - self._started
        if self._stream is not None:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
        return self.summary
