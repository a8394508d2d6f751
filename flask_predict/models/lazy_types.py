"""What the lazy tier (:mod:`.lazy`) tells its listeners and lists in its index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

Listener = Callable[[str, str, int, float], None]
"""``(event, model, version, seconds)``: ``"loaded"``, ``"failed"``, ``"unloaded"`` (as the
repository tells the metrics), then ``"evicted"`` (no longer held here)."""
Events = Callable[[str, float], None]
"""``(event, value)``: ``"hit"``, ``"miss"``, ``"evicted"`` (value 1), ``"load"`` (its
seconds), ``"models"`` and ``"bytes"`` (what the tier holds now)."""


@dataclass(frozen=True)
class TierEntry:
    """One model of the tier as the indexes list it."""

    name: str
    state: str
    """``AVAILABLE`` (loaded here), ``LOADING``, ``UNAVAILABLE`` (on disk, not loaded) or
    ``END`` (its last load failed)."""
    reason: str
    bytes: int = 0
