"""What every protocol reads from a JSON request body, without Flask: the bounded parse,
the fast read of a plain matrix of numbers, and the words for a JSON value's kind. The REST
views (:mod:`flask_predict.web.protocol_http` reads the body) and the pure decoders share them."""

from __future__ import annotations

from typing import Any, Callable

from .. import codecs
from ..errors import InvalidInput
from ..types import Limits, Tensor


def parse_json(body: bytes, limits: Limits, parse: Callable[[bytes], Any] = codecs.loads
               ) -> Any:
    """*body* parsed by *parse*, at most ``PREDICT_MAX_JSON_DEPTH`` levels deep."""
    if not body or body.isspace():
        raise InvalidInput("JSON Parse error: The document is empty")
    document = parse(body)
    codecs.check_depth(body, limits.max_json_depth)
    return document


MATRIX_DEPTH = 3
"""How deeply ``{"<key>": [[...], ...]}`` nests."""


def number_matrix(body: bytes, key: str, limits: Limits) -> Tensor | None:
    """``codecs.number_matrix`` within ``PREDICT_MAX_JSON_DEPTH``: under a limit of 2 the
    body is left to the full parse, which refuses it."""
    if limits.max_json_depth < MATRIX_DEPTH:
        return None
    return codecs.number_matrix(body, key)

