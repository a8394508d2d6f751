"""TF Serving's URL grammar (``http_rest_api_util.cc``): every ``(?i)/v1/.*`` path is TF
Serving's own, matched case-insensitively against two regular expressions, one for each
method it serves; anything else under ``/v1/`` is a 400 ``Malformed request``.

The usual lowercase URLs are Flask rules; the rest (``/V1/MODELS/x``, unknown shapes, other
methods) reach one catch-all view, which matches them here exactly as TF Serving does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from werkzeug.routing import BaseConverter

PREDICT_PATH = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/([0-9]+)|/labels/([^/:]+))?:(classify|regress|predict|explain)",
    re.IGNORECASE)
STATUS_PATH = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/([0-9]+)|/labels/([^/:]+))?(?:/(metadata))?",
    re.IGNORECASE)
VERBS = ("predict", "classify", "regress", "explain")
"""TF Serving's verbs, and KServe V1's ``explain`` (its V1 protocol is TF Serving's REST
API plus that verb, on the same paths)."""


class AnyCaseV1(BaseConverter):
    """The first path segment ``v1`` in any letter case (TF Serving's ``(?i)/v1/``)."""

    regex = "[vV]1"


CONVERTER = "predict_tfserving_v1"
"""The name :class:`AnyCaseV1` is registered under in the app's URL map."""


@dataclass(frozen=True)
class Match:
    """What a path asks for: ``view`` is ``status``, ``metadata``, ``missing_model`` (GET
    ``/v1/models``), a verb, or ``malformed``."""

    view: str
    model: str | None = None
    version: str | None = None
    label: str | None = None


def match(method: str, path: str) -> Match:
    """Match *path* (``/v1/...``, any case) as TF Serving does for *method*."""
    if method == "POST":
        found = PREDICT_PATH.fullmatch(path)
        if found:
            model, version, label, verb = found.groups()
            # the verb's case is captured, then compared exactly
            return Match(verb if verb in VERBS else "malformed", model, version, label)
    elif method == "GET":
        found = STATUS_PATH.fullmatch(path)
        if found:
            model, version, label, metadata = found.groups()
            if model is None:
                return Match("missing_model")
            # "/METADATA" is captured but is not "metadata": a status request
            return Match("metadata" if metadata == "metadata" else "status", model, version,
                         label)
    return Match("malformed")
