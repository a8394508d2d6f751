"""Who may call: tokens for prediction routes, and a check for routes that change state.

A client presents a token as ``Authorization: Bearer <token>``, as ``X-API-Key: <token>``,
or as the password of HTTP Basic authentication (what a browser sends after the status
page asks for it); :mod:`flask_predict.request.tokens` finds and compares it in constant time.
Failures raise the errors the protocol's own handler turns into its 401 or 403 body; the
front end adds the ``WWW-Authenticate`` header.
"""

from __future__ import annotations

from functools import wraps
from ipaddress import ip_address
from typing import Callable, TypeVar, cast

from flask import request

from ..request.tokens import presented_token, token_matches
from ..errors import PermissionDenied, Unauthenticated
from .current import get_state

F = TypeVar("F", bound=Callable[..., object])

REALM = "flask-predict"
BEARER_CHALLENGE = f'Bearer realm="{REALM}"'
BASIC_CHALLENGE = f'Basic realm="{REALM}", charset="UTF-8"'


def check_client(tokens: tuple[str, ...], admin_tokens: tuple[str, ...]) -> None:
    """Raise :class:`Unauthenticated` unless the request carries one of the tokens (an
    admin token also serves)."""
    token = presented_token(request.environ)
    if not (token_matches(token, tokens) or token_matches(token, admin_tokens)):
        raise Unauthenticated("a valid token is required: send 'Authorization: Bearer "
                              "<token>' or 'X-API-Key: <token>'")


def require_token() -> None:
    """:func:`check_client` with the app's tokens, when it has any (metrics, status page)."""
    settings = get_state().settings
    if settings.auth.tokens:
        check_client(settings.auth.tokens, settings.auth.admin_tokens)


def is_loopback() -> bool:
    """The client is this machine and no proxy forwarded the request for someone else."""
    environ = request.environ
    if "HTTP_X_FORWARDED_FOR" in environ or "HTTP_FORWARDED" in environ:
        return False
    try:
        return ip_address(str(request.remote_addr or "")).is_loopback
    except ValueError:
        return False


def check_admin() -> None:
    """Let a state-changing request through, or raise.

    Served when it carries an admin token (``PREDICT_ADMIN_TOKENS``), or when it comes from
    loopback and ``PREDICT_ADMIN_LOOPBACK`` is on (the default). Otherwise 401 when admin
    tokens are configured, 403 when none is.
    """
    settings = get_state().settings
    if token_matches(presented_token(request.environ), settings.auth.admin_tokens):
        return
    if settings.auth.admin_loopback and is_loopback():
        return
    if settings.auth.admin_tokens:
        raise Unauthenticated("this route changes the server's state: send an admin token")
    raise PermissionDenied("this route changes the server's state and is served only to "
                           "loopback clients; configure PREDICT_ADMIN_TOKENS to allow others")


def admin_only(view: F) -> F:
    """Decorate a view that changes server state (online/offline, load/unload)."""

    @wraps(view)
    def guarded(*args: object, **kwargs: object) -> object:
        check_admin()
        return view(*args, **kwargs)

    return cast(F, guarded)
