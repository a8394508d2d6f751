"""The AI Platform and Vertex AI routes on one blueprint: :mod:`.ml` (``projects.predict``,
the model and version GETs) and :mod:`.vertex` (endpoints, a custom container's routes)."""

from __future__ import annotations

from . import ml, vertex
from .blueprint import bp

__all__ = ["bp", "ml", "vertex"]
