"""The gRPC side of authentication: the same tokens and admin rule as the HTTP routes
(:mod:`flask_predict.web.auth`), read from call metadata.

Every rpc needs one of ``PREDICT_AUTH_TOKENS`` (or an admin token) when tokens are
configured, sent as ``authorization: Bearer <token>`` or ``x-api-key: <token>``; the health
service stays open for probes, as ``/v2/health/*`` does. The state-changing rpcs (grps's
``Online`` and ``Offline``, V2's ``RepositoryModelLoad`` and ``RepositoryModelUnload``) need
an admin token, or a loopback peer while
``PREDICT_ADMIN_LOOPBACK`` is on (the default): the rpcs whose verb is ``admin`` in their
protocol's descriptor.

:class:`CallGuard` decides. The protocols' services ask it inside each call's request scope
(:mod:`.handlers`), so a refused call is recorded, counted and access-logged as a REST 401
or 403 is; the services no scope covers (server reflection) are registered through a
:class:`GuardedRegistrar`, which asks it before each of their calls. No server interceptor:
one would run on every call's method lookup, the protocols' calls included.
"""

from __future__ import annotations

from ipaddress import ip_address
from typing import Any, Callable

import grpc

from ..request.record import ADMIN_VERB
from ..request.tokens import presented_token, token_matches
from ..errors import PermissionDenied, PredictError, Unauthenticated
from ..request.protocol_table import descriptors
from ..settings.config import Settings
from .handlers import GRPC_STATUS

OPEN_PREFIXES = ("/grpc.health.v1.Health/",)
"""Probes answer without a token."""


def admin_methods(settings: Settings) -> frozenset[str]:
    """``/<service>/<rpc>`` of every admin rpc of the protocols *settings* serve."""
    return frozenset(f"/{service}/{rpc}" for protocol in descriptors(settings.protocols)
                     for service in protocol.services
                     for rpc, verb in protocol.rpc_verbs.items() if verb == ADMIN_VERB)


def call_token(context: grpc.ServicerContext) -> str | None:
    """The token a call carries: its metadata read as HTTP headers are."""
    environ = {"HTTP_" + key.upper().replace("-", "_"): value
               for key, value in context.invocation_metadata() if isinstance(value, str)}
    return presented_token(environ)


def is_loopback_peer(peer: str) -> bool:
    """``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000`` and ``unix:`` peers are this machine."""
    kind, _, rest = peer.partition(":")
    if kind == "unix":
        return True
    host = rest.rsplit(":", 1)[0].strip("[]")
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


class CallGuard:
    """Who may make each call: :meth:`check` raises :class:`Unauthenticated` or
    :class:`PermissionDenied` for a call the settings refuse."""

    def __init__(self, settings: Settings) -> None:
        self.tokens = settings.auth.tokens
        self.admin_tokens = settings.auth.admin_tokens
        self.admin_loopback = settings.auth.admin_loopback
        self.admin_methods = admin_methods(settings)

    def __call__(self, method: str, context: grpc.ServicerContext) -> None:
        """Let the call to *method* (``/<service>/<rpc>``) through, or raise."""
        if method.startswith(OPEN_PREFIXES):
            return
        if method in self.admin_methods:
            self.check_admin(context)
        elif self.tokens:
            self.check_client(context)

    def check_client(self, context: grpc.ServicerContext) -> None:
        token = call_token(context)
        if not (token_matches(token, self.tokens) or token_matches(token, self.admin_tokens)):
            raise Unauthenticated("a valid token is required: send 'authorization: Bearer "
                                  "<token>' or 'x-api-key: <token>' metadata")

    def check_admin(self, context: grpc.ServicerContext) -> None:
        if token_matches(call_token(context), self.admin_tokens):
            return
        if self.admin_loopback and is_loopback_peer(context.peer()):
            return
        if self.admin_tokens:
            raise Unauthenticated("this call changes the server: send an admin token")
        raise PermissionDenied("this call changes the server: allowed from loopback only, "
                               "or set PREDICT_ADMIN_TOKENS")


class GuardedRegistrar:
    """Stands in for *server* when another library registers its services (server
    reflection): each of their method handlers asks *guard* first, so a refused call ends
    with ``UNAUTHENTICATED`` or ``PERMISSION_DENIED`` before the library's code runs."""

    def __init__(self, server: grpc.Server, guard: CallGuard) -> None:
        self.server = server
        self.guard = guard

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.server.add_registered_method_handlers(service, {
            name: guarded(handler, f"/{service}/{name}", self.guard)
            for name, handler in handlers.items()})

    def add_generic_rpc_handlers(self, handlers: tuple[Any, ...]) -> None:
        self.server.add_generic_rpc_handlers(tuple(_GuardedLookup(handler, self.guard)
                                                   for handler in handlers))


class _GuardedLookup(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc has no hints
    """A generic handler whose handlers ask the guard first."""

    def __init__(self, inner: Any, guard: CallGuard) -> None:
        self.inner = inner
        self.guard = guard

    def service(self, details: Any) -> Any:
        handler = self.inner.service(details)
        return None if handler is None else guarded(handler, details.method, self.guard)


def guarded(handler: Any, method: str, guard: CallGuard) -> Any:
    """*handler* with *guard* asked before each of its behaviours."""
    def wrap(behaviour: Callable[[Any, grpc.ServicerContext], Any] | None) -> Any:
        if behaviour is None:
            return None

        def run(request: Any, context: grpc.ServicerContext) -> Any:
            try:
                guard(method, context)
            except PredictError as exc:
                context.abort(GRPC_STATUS[exc.code], exc.message)
            return behaviour(request, context)
        return run

    return handler._replace(unary_unary=wrap(handler.unary_unary),
                            unary_stream=wrap(handler.unary_stream),
                            stream_unary=wrap(handler.stream_unary),
                            stream_stream=wrap(handler.stream_stream))
