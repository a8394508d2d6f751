"""Batch prediction jobs: files of instances in, Vertex AI's output lines out
(``flask-predict batch``; :func:`run` from Python)."""

from __future__ import annotations

from .instances import InstanceConfig
from .job import run
from .progress import Summary
from .reading import ARRAY, OBJECT
from .sources import Opener, Source, expand, register_opener

__all__ = ["ARRAY", "OBJECT", "InstanceConfig", "Opener", "Source", "Summary", "expand", "register_opener",
           "run"]
