"""One gRPC server per worker process, for that worker's own loaded models.

Every gunicorn worker binds the same ``PREDICT_GRPC_PORT`` with ``SO_REUSEPORT``: the
kernel spreads new connections over the workers listening on it, so no model is loaded
twice and no extra process exists. gRPC keeps a connection open for many calls, so calls
are spread per connection, not per call (see docs/protocols/grpc.md). Services follow
``PREDICT_PROTOCOLS``; the standard health service and server reflection are always on.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2

from ..errors import ConfigError
from ..protocols.grps import dispatch
from . import grps, kserve_v2, messages, tfserving
from .auth import TokenInterceptor
from .handlers import service_handler

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ..state import PredictState

logger = logging.getLogger("flask_predict.grpc")

SERVICES: dict[str, dict[str, Any]] = {
    "tfserving": {"tensorflow.serving.PredictionService": tfserving.PredictionServicer,
                  "tensorflow.serving.ModelService": tfserving.ModelServicer},
    "kserve_v2": {"inference.GRPCInferenceService": kserve_v2.InferenceServicer},
    "grps": {grps.SERVICE: grps.GrpsServicer},
}
"""``PREDICT_PROTOCOLS`` name -> the gRPC services (full name -> servicer class) it adds."""


class Health(health.HealthServicer):  # type: ignore[misc]  # grpcio-health-checking: untyped
    """``grpc.health.v1.Health``: ``SERVING`` while the server is ready, as V2's
    ``/v2/health/ready`` (for the grps service, also while grps is online); ``NOT_FOUND``
    for another service.
    ``Check`` answers from the live state and updates what ``Watch`` streams."""

    def __init__(self, state: PredictState, services: list[str]) -> None:
        super().__init__()
        self._state = state
        self._services = services

    def status(self, name: str) -> Any:
        if name and name not in self._services:
            return None
        ready = self._state.service.ready
        if name == grps.SERVICE:
            ready = dispatch.is_ready(self._state)
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
        if settings.grpc_port is None:
            raise ConfigError("PREDICT_GRPC_PORT is not set")
        self.address = f"{settings.grpc_host}:{settings.grpc_port}"
        self.grace = settings.grpc_grace_seconds
        self.server = grpc.server(
            ThreadPoolExecutor(settings.grpc_threads, thread_name_prefix="flask-predict-grpc"),
            interceptors=[TokenInterceptor(settings)],
            options=[("grpc.so_reuseport", 1),
                     ("grpc.max_receive_message_length", settings.grpc_max_message_bytes),
                     ("grpc.max_send_message_length", -1)])
        names = []
        for protocol in settings.protocols:
            for name, servicer in SERVICES.get(protocol, {}).items():
                self.server.add_generic_rpc_handlers((service_handler(
                    name, servicer(state), state.metrics, protocol),))
                names.append(name)
        health_pb2_grpc.add_HealthServicer_to_server(Health(state, names), self.server)
        for module in (health_pb2, reflection_pb2):
            messages.add_file(module.DESCRIPTOR.serialized_pb)
        reflection.enable_server_reflection(
            (*names, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server,
            pool=messages.POOL)
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
