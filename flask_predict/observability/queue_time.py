"""How long a request waited before a worker took it, from the ``X-Request-Start`` header
that a front end sets when it accepts the request: nginx's ``t=${msec}`` (seconds with
milliseconds, what deploy/nginx sets), or a whole number of milliseconds, microseconds or
nanoseconds since the epoch (Heroku's routers, Apache's ``%t``, HAProxy setups), with or
without ``t=``. A sync worker's wait is mostly the listen backlog, which nothing else shows."""

from __future__ import annotations

HEADER = "x-request-start"

_UNITS = ((1e11, 1.0), (1e14, 1e-3), (1e17, 1e-6), (float("inf"), 1e-9))
"""Epoch values below each bound -> their unit in seconds (seconds until the year 5138)."""


def queue_seconds(value: str | None, now: float) -> float | None:
    """The wait between *value*'s time and *now* (unix seconds); ``None`` without a usable
    header. A front end's clock a little ahead of this host's reads as no wait."""
    if not value:
        return None
    text = value.strip()
    if text.startswith("t="):
        text = text[2:]
    try:
        number = float(text)
    except ValueError:
        return None
    if not number > 0:
        return None
    scale = next(unit for bound, unit in _UNITS if number < bound)
    return max(0.0, now - number * scale)
