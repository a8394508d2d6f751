"""Model control is the service's: index, load, unload and the online switch asked through
every front end (V2's repository extension over REST and gRPC, grps's online/offline over
REST and gRPC) reach the same :class:`~flask_predict.core.service.ModelService` calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import grpc
import pytest
from flask import Flask

from flask_predict.core.service import ModelService
from tests import grpc_app

grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

CONTROL = ("index", "load", "unload", "set_online")


@pytest.fixture()
def served(model_config: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[tuple[Flask, int, list[tuple[Any, ...]]]]:
    calls: list[tuple[Any, ...]] = []
    for name in CONTROL:
        method = getattr(ModelService, name)

        def spy(self: ModelService, *args: Any, _name: str = name, _method: Any = method
                ) -> Any:
            calls.append((_name, *args))
            return _method(self, *args)

        monkeypatch.setattr(ModelService, name, spy)
    config = {"iris": model_config["iris"]}
    for app, port in grpc_app.serving(config, poll_seconds=60,
                                      state_dir=str(tmp_path / "state"),
                                      protocols=["kserve_v2", "grps"]):
        try:
            yield app, port, calls
        finally:
            app.extensions["predict"].service.control.stop()


EXPECTED = [("index",), ("unload", "iris"), ("load", "iris"), ("set_online", False),
            ("set_online", True)]


def test_rest_front_ends_ask_the_service(served: tuple[Flask, int, list[tuple[Any, ...]]]
                                         ) -> None:
    app, _, calls = served
    client = app.test_client()
    index = client.post("/v2/repository/index")
    assert index.status_code == 200
    assert index.get_json() == [{"name": "iris", "version": "1", "state": "READY",
                                 "reason": ""}]
    assert client.post("/v2/repository/models/iris/unload").status_code == 200
    assert client.get("/v2/models/iris/ready").status_code == 404  # unloaded: unknown
    assert client.post("/v2/repository/models/iris/load").status_code == 200
    assert client.get("/v2/models/iris/ready").status_code == 200
    assert client.get("/grps/v1/health/offline").status_code == 200
    assert client.get("/grps/v1/health/ready").status_code == 503
    assert client.get("/grps/v1/health/online").status_code == 200
    assert client.get("/grps/v1/health/ready").status_code == 200
    assert calls == EXPECTED


def test_grpc_front_ends_ask_the_service(served: tuple[Flask, int, list[tuple[Any, ...]]]
                                         ) -> None:
    _, port, calls = served
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        index = client.get_model_repository_index(as_json=True)
        assert index["models"] == [{"name": "iris", "version": "1", "state": "READY"}]
        client.unload_model("iris")
        with pytest.raises(InferenceServerException, match="not found"):
            client.is_model_ready("iris")  # unloaded: unknown, as over REST
        client.load_model("iris")
        assert client.is_model_ready("iris")
    finally:
        client.close()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        for rpc in ("Offline", "Online"):
            channel.unary_unary(f"/grps.protos.v1.GrpsService/{rpc}",
                                request_serializer=lambda raw: raw,
                                response_deserializer=lambda raw: raw)(b"", timeout=10)
    assert calls == EXPECTED
