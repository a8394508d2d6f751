"""gRPC calls obey the same tokens and admin rule as the HTTP routes."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import grpc
import pytest

from flask_predict.grpc.auth import CallGuard, GuardedRegistrar, is_loopback_peer
from flask_predict.settings.app import read_settings
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


def test_a_refused_call_is_counted_and_logged_as_a_refused_rest_request(
        model_config: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    """The guard refuses inside the call's request scope: the refusal has its access line
    and its count in the metrics, with the status a REST refusal has (401, 403)."""
    for app, port in serving(model_config, auth_tokens=["s3cret-token-0123456789"],
                             admin_loopback=False, access_log="json"):
        with caplog.at_level(logging.INFO, logger="flask_predict.access"):
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                metadata = channel.unary_unary("/inference.GRPCInferenceService/ModelMetadata",
                                           request_serializer=lambda raw: raw,
                                           response_deserializer=lambda raw: raw)
                with pytest.raises(grpc.RpcError) as refused:
                    metadata(b"", timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as denied:
                offline(port, (("x-api-key", "s3cret-token-0123456789"),))
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert app.test_client().post("/v2/models/iris/infer", json={}).status_code == 401
        lines = [json.loads(r.getMessage()) for r in caplog.records
                 if r.name == "flask_predict.access"]
        assert [(line["protocol"], line["path"], line["verb"], line["status"])
                for line in lines] == [
            ("kserve_v2_grpc", "/inference.GRPCInferenceService/ModelMetadata", "metadata", 401),
            ("grps_grpc", "/grps.protos.v1.GrpsService/Offline", "admin", 403),
            ("kserve_v2", "/v2/models/iris/infer", "predict", 401)]
        series = app.extensions["predict"].metrics.exposition()[0].decode()
        for protocol, verb, code in (("kserve_v2_grpc", "metadata", 401),
                                     ("grps_grpc", "admin", 403), ("kserve_v2", "predict", 401)):
            assert (f'flask_predict_requests_total{{code="{code}",model="",protocol='
                    f'"{protocol}",verb="{verb}",version=""}} 1.0') in series


def test_server_reflection_needs_the_token_too(guarded: int) -> None:
    """A service outside the protocols (reflection) asks the guard too."""
    reflection = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2")
    stubs = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2_grpc")
    asked = reflection.ServerReflectionRequest(list_services="")
    with grpc.insecure_channel(f"127.0.0.1:{guarded}") as channel:
        stub = stubs.ServerReflectionStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            list(stub.ServerReflectionInfo(iter([asked]), timeout=10))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        answers = list(stub.ServerReflectionInfo(
            iter([asked]), timeout=10,
            metadata=(("authorization", "Bearer s3cret-token-0123456789"),)))
    names = {s.name for s in answers[0].list_services_response.service}
    assert "inference.GRPCInferenceService" in names


def test_a_library_s_generic_handlers_ask_the_guard_too() -> None:
    """A service another library registers only as a generic handler is guarded as
    reflection is: refused without a token, served with one."""
    settings = read_settings({"PREDICT_AUTH_TOKENS": ["s3cret-token-0123456789"]})
    server = grpc.server(ThreadPoolExecutor(1))
    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    GuardedRegistrar(server, CallGuard(settings)).add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("other.Echo", {"Echo": echo}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary("/other.Echo/Echo")
            with pytest.raises(grpc.RpcError) as refused:
                call(b"ping", timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert call(b"ping", timeout=10, metadata=(
                ("authorization", "Bearer s3cret-token-0123456789"),)) == b"ping"
            with pytest.raises(grpc.RpcError) as missing:
                channel.unary_unary("/other.Echo/Other")(b"ping", timeout=10)
            assert missing.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.stop(None)
