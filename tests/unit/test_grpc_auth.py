"""gRPC calls obey the same tokens and admin rule as the HTTP routes."""

from __future__ import annotations

from typing import Any, Iterator

import grpc
import pytest

from flask_predict.grpc.auth import is_loopback_peer
from tests.grpc_app import serving

tritonclient_grpc = pytest.importorskip("tritonclient.grpc")
health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
health_pb2_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")


@pytest.fixture()
def guarded(model_config: dict[str, Any]) -> Iterator[int]:
    for _, port in serving(model_config, auth_tokens=["s3cret-token-0123456789"], admin_tokens=["root-token-0123456789ab"]):
        yield port


def test_calls_need_a_token_when_tokens_are_set(guarded: int,
                                                request: pytest.FixtureRequest) -> None:
    client = tritonclient_grpc.InferenceServerClient(f"127.0.0.1:{guarded}")
    request.addfinalizer(client.close)
    with pytest.raises(tritonclient_grpc.InferenceServerException, match="token"):
        client.is_server_live()
    with pytest.raises(tritonclient_grpc.InferenceServerException, match="token"):
        client.get_model_metadata("iris", headers={"authorization": "Bearer wrong"})
    assert client.is_server_live(headers={"authorization": "Bearer s3cret-token-0123456789"})
    assert client.get_model_metadata("iris", headers={"x-api-key": "s3cret-token-0123456789"}).name == "iris"
    assert client.is_server_live(headers={"authorization": "Bearer root-token-0123456789ab"})  # admin serves too


def test_health_probes_need_no_token(guarded: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{guarded}") as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def offline(port: int, metadata: tuple[tuple[str, str], ...] = ()) -> bytes:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/grps.protos.v1.GrpsService/Offline",
                                   request_serializer=lambda raw: raw,
                                   response_deserializer=lambda raw: raw)
        answer: bytes = call(b"", metadata=metadata, timeout=10)
        return answer


def test_state_changing_rpcs_follow_the_admin_rule(model_config: dict[str, Any]) -> None:
    for _, port in serving(model_config):  # default: loopback may, as over HTTP
        offline(port)
    for _, port in serving(model_config, admin_loopback=False):
        with pytest.raises(grpc.RpcError) as refused:
            offline(port)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    for _, port in serving(model_config, admin_loopback=False, admin_tokens=["root-token-0123456789ab"]):
        with pytest.raises(grpc.RpcError) as refused:
            offline(port, (("authorization", "Bearer nope"),))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        offline(port, (("authorization", "Bearer root-token-0123456789ab"),))


@pytest.mark.parametrize("peer, loopback", [
    ("ipv4:127.0.0.1:5000", True), ("ipv6:[::1]:5000", True), ("unix:/tmp/s", True),
    ("ipv4:10.0.0.2:5000", False), ("ipv6:[2001:db8::1]:80", False), ("garbage", False)])
def test_loopback_peers(peer: str, loopback: bool) -> None:
    assert is_loopback_peer(peer) is loopback
