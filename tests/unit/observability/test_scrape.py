"""The scrape made in a forked child: the same text as one made here, and the one made here
when the child fails or hangs."""

from __future__ import annotations

import logging
import os
import time
from typing import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.metrics_core import Metric

from flask_predict.observability import scrape


class _OnlyHere:
    """A collector whose child side hangs or dies (by *child*); here it answers."""

    def __init__(self, parent: int, child: str) -> None:
        self.parent, self.child = parent, child

    def collect(self) -> Iterator[Metric]:
        if os.getpid() != self.parent:
            if self.child == "hang":
                time.sleep(30)
            raise RuntimeError("a child that fails")
        metric = Metric("made_here", "made in the worker", "gauge")
        metric.add_sample("made_here", {}, 1.0)
        yield metric


def test_the_childs_text_is_the_registrys() -> None:
    registry = CollectorRegistry()
    counter = Counter("requests", "Requests", ("model",), registry=registry)
    for n in range(3000):  # past a pipe's buffer: the worker reads as the child writes
        counter.labels(f"model-{n:05}").inc(n)
    made = scrape.exposition_in_child(registry)
    assert made == generate_latest(registry) and len(made) > 1 << 16


@pytest.mark.parametrize("child", ["fail", "hang"])
def test_a_child_that_fails_or_hangs_is_replaced_by_a_scrape_here(
        child: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(scrape, "CHILD_SECONDS", 1.0)
    registry = CollectorRegistry()
    registry.register(_OnlyHere(os.getpid(), child))
    started = time.monotonic()
    assert b"made_here 1.0" in scrape.exposition_in_child(registry)
    assert time.monotonic() - started < 10
    assert "scrape's child process failed" in caplog.text


def test_no_child_to_spare_scrapes_here(monkeypatch: pytest.MonkeyPatch,
                                        caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    Counter("requests", "Requests", registry=registry).inc()

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert scrape.exposition_in_child(registry) == generate_latest(registry)
    assert "no child process for the scrape" in caplog.text
