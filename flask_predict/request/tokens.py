"""Client tokens, without Flask: where a request carries one, how one is compared, and how
the configured ones are read (:mod:`flask_predict.web.auth` applies them to routes)."""

from __future__ import annotations

import binascii
import hmac
from base64 import b64decode
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError


def presented_token(environ: Mapping[str, object]) -> str | None:
    """The token a request carries, if any: ``Authorization: Bearer <token>``,
    ``X-API-Key: <token>``, or the password of HTTP Basic authentication."""
    key = environ.get("HTTP_X_API_KEY")
    if isinstance(key, str) and key:
        return key.strip()
    header = environ.get("HTTP_AUTHORIZATION")
    if not isinstance(header, str):
        return None
    scheme, _, value = header.strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return value.strip() or None
    if scheme == "basic":
        try:
            decoded = b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return None


def token_matches(token: str | None, tokens: tuple[str, ...]) -> bool:
    """Whether *token* is one of *tokens*, in time that does not depend on which (or on how
    much of one) matched."""
    if token is None:
        return False
    given = token.encode("utf-8", "replace")
    found = False
    for candidate in tokens:
        found |= hmac.compare_digest(given, candidate.encode("utf-8"))
    return found


def read_tokens(values: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """Tokens from setting *key* (a list or comma-separated string) and from the file that
    ``<key>_FILE`` names (one a line; blank lines and ``#`` comments skipped)."""
    value = values[key] or []
    tokens = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise ConfigError(f"{key} must be a list of tokens, got {type(value).__name__}")
    tokens = [t for t in tokens if t]
    path = values[f"{key}_FILE"]
    if path:
        try:
            lines = Path(str(path)).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"{key}_FILE: cannot read {str(path)!r}: {exc.strerror}")
        tokens.extend(line.strip() for line in lines
                      if line.strip() and not line.lstrip().startswith("#"))
    for token in tokens:
        if len(token) < 16 or not token.isascii() or not token.isprintable() or " " in token:
            raise ConfigError(f"{key}: each token must be at least 16 printable ASCII "
                              "characters without spaces")
    return tuple(tokens)
