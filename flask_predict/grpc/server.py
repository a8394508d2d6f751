"""One gRPC server per worker process, for that worker's own loaded models.

Every gunicorn worker binds the same ``PREDICT_GRPC_PORT`` with ``SO_REUSEPORT``: the
kernel spreads new connections over the workers listening on it, so no model is loaded
twice and no extra process exists. gRPC keeps a connection open for many calls, so calls
are spread per connection, not per call (see docs/protocols/grpc.md). Services are those
the protocols in ``PREDICT_PROTOCOLS`` describe (their servicers live in their own packages);
the standard health service and server reflection are always on.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from . import messages
from ..core.state import PredictState
from ..errors import ConfigError
from ..request.protocol_table import descriptors
from .auth import CallGuard, GuardedRegistrar
from .handlers import method_handlers

logger = logging.getLogger("flask_predict.grpc")


class Health(health.HealthServicer):  # type: ignore[misc]  # grpcio-health-checking: untyped
    """``grpc.health.v1.Health``: ``SERVING`` while the server is ready, as V2's
    ``/v2/health/ready`` (or as a service's own ``ready()`` says: grps's, also while the
    server is online); ``NOT_FOUND`` for another service.
    ``Check`` answers from the live state and updates what ``Watch`` streams."""

    def __init__(self, state: PredictState, servicers: dict[str, Any]) -> None:
        super().__init__()
        self._state = state
        self._servicers = servicers

    def status(self, name: str) -> Any:
        if name and name not in self._servicers:
            return None
        own = getattr(self._servicers.get(name), "ready", None)
        ready = own() if callable(own) else self._state.service.ready
        return (health_pb2.HealthCheckResponse.SERVING if ready
                else health_pb2.HealthCheckResponse.NOT_SERVING)

    def Check(self, request: Any, context: Any) -> Any:
        status = self.status(request.service)
        if status is not None:
            self.set(request.service, status)
        return super().Check(request, context)


class GrpcServer:
    """This worker's gRPC server over the models of *state*.

    :meth:`start` binds ``PREDICT_GRPC_HOST:PREDICT_GRPC_PORT`` (sharing it with the other
    workers) and returns the port; :meth:`stop` lets calls in flight finish for up to
    ``PREDICT_GRPC_GRACE_SECONDS`` and refuses new ones.
    """

    def __init__(self, state: PredictState) -> None:
        settings = state.settings
        if settings.grpc.port is None:
            raise ConfigError("PREDICT_GRPC_PORT is not set")
        self.address = f"{settings.grpc.host}:{settings.grpc.port}"
        self.grace = settings.grpc.grace_seconds
        protocols = descriptors(settings.protocols)
        guard = CallGuard(settings)
        self.server = grpc.server(
            ThreadPoolExecutor(settings.grpc.threads, thread_name_prefix="flask-predict-grpc"),
            options=[("grpc.so_reuseport", 1),
                     ("grpc.max_receive_message_length", settings.grpc.max_message_bytes),
                     ("grpc.max_send_message_length", -1)])
        scopes = state.scopes
        servicers: dict[str, Any] = {}
        for protocol in protocols:
            for name, servicer_class in protocol.load_servicers().items():
                servicers[name] = servicer = servicer_class(state)
                self.server.add_registered_method_handlers(name, method_handlers(
                    name, servicer, scopes, protocol, settings.grpc.port or None, guard))
        names = list(servicers)
        health_pb2_grpc.add_HealthServicer_to_server(Health(state, servicers), self.server)
        for module in (health_pb2, reflection_pb2):
            messages.add_file(module.DESCRIPTOR.serialized_pb)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
            reflection.ReflectionServicer((*names, health.SERVICE_NAME, reflection.SERVICE_NAME),
                                          pool=messages.POOL),
            GuardedRegistrar(self.server, guard))
        self.services = names
        self.port = 0

    def start(self) -> int:
        """Bind and serve; the bound port (useful with port 0: any free port)."""
        try:
            self.port = self.server.add_insecure_port(self.address)
        except RuntimeError as exc:
            self.port = 0
            reason = str(exc)
        else:
            reason = "the address is in use or invalid"
        if not self.port:
            raise ConfigError(f"PREDICT_GRPC_PORT: cannot serve gRPC on {self.address}: "
                              f"{reason}")
        self.server.start()
        logger.info("flask_predict: serving gRPC on %s: %s", self.address,
                    ", ".join(self.services))
        return int(self.port)

    def stop(self, grace: float | None = None) -> None:
        """Stop serving, letting calls in flight finish within *grace* seconds."""
        self.server.stop(self.grace if grace is None else grace).wait()
