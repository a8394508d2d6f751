"""V2's repository extension over a lazy tier, as Triton's explicit mode: a folder that
appears in the root after start is loaded by name, unloaded, and listed in the index with
its state; errors in V2's format. Through the Flask test client and over gRPC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_predict.extension import close_app
from tests.conftest import AppFactory
from tests.lazy_models import linear_answer, train_linear

ROW = [1.0, 2.0, 3.0]
INFER = {"inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 3], "data": ROW}]}
FAR_AWAY = {"REMOTE_ADDR": "10.1.2.3"}


@pytest.fixture()
def lazy_app(make_app: AppFactory, model_config: dict[str, Any], tmp_path: Path) -> Any:
    """An app serving iris (configured) and a lazy root of three models; closed after."""
    root = tmp_path / "root"
    for seed in (1, 2, 3):
        train_linear(root / f"m{seed}", seed)
    apps: list[Flask] = []

    def build(**settings: Any) -> tuple[Flask, Path]:
        settings.setdefault("lazy_root", str(root))
        app = make_app({"iris": model_config["iris"]}, **settings)
        apps.append(app)
        return app, root

    yield build
    for app in apps:
        close_app(app)


def infer(client: Any, name: str) -> Any:
    return client.post(f"/v2/models/{name}/infer", json=INFER)


def index(client: Any) -> dict[str, dict[str, str]]:
    got = client.post("/v2/repository/index")
    assert got.status_code == 200
    return {entry["name"]: entry for entry in got.get_json()}


def test_first_request_loads_and_the_index_says_so(lazy_app: Any) -> None:
    app, _ = lazy_app()
    client = app.test_client()
    assert "model_repository" in client.get("/v2").get_json()["extensions"]
    before = index(client)
    assert before["m2"] == {"name": "m2", "state": "UNAVAILABLE", "reason": "not loaded"}
    assert before["iris"]["state"] == "READY"
    got = infer(client, "m2")
    assert got.status_code == 200
    assert got.get_json()["outputs"][0]["data"] == [linear_answer(2, ROW)]
    assert index(client)["m2"] == {"name": "m2", "version": "1", "state": "READY",
                                   "reason": ""}
    ready = client.post("/v2/repository/index", json={"ready": True}).get_json()
    assert sorted(entry["name"] for entry in ready) == ["iris", "m2"]


def test_a_folder_added_after_start_loads_and_unloads(lazy_app: Any) -> None:
    app, root = lazy_app()
    client = app.test_client()
    assert client.post("/v2/repository/models/late/load").status_code == 404
    train_linear(root / "late", 7)
    loaded = client.post("/v2/repository/models/late/load")
    assert loaded.status_code == 200
    assert index(client)["late"]["state"] == "READY"
    assert infer(client, "late").get_json()["outputs"][0]["data"] == [linear_answer(7, ROW)]
    assert client.post("/v2/repository/models/late/unload").status_code == 200
    assert index(client)["late"] == {"name": "late", "state": "UNAVAILABLE",
                                     "reason": "unloaded"}
    gone = infer(client, "late")  # unloaded stays unloaded, not loaded again on demand
    assert gone.status_code == 404 and "late" in gone.get_json()["error"]
    assert client.post("/v2/repository/models/late/load").status_code == 200
    assert infer(client, "late").status_code == 200


def test_repository_errors_in_v2_words(lazy_app: Any) -> None:
    app, root = lazy_app()
    client = app.test_client()
    broken = root / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "model.joblib").write_bytes(b"not a pickle at all\n" * 4)
    for path, status, words in [
            ("/v2/repository/models/nope/load", 404, "failed to load 'nope'"),
            ("/v2/repository/models/nope/unload", 404, "failed to unload 'nope'"),
            ("/v2/repository/models/.hidden/load", 404, "failed to load '.hidden'"),
            ("/v2/repository/models/%2E%2E/load", 404, "failed to load '..'"),
            ("/v2/repository/models/broken/load", 400, "'broken' failed to load"),
            ("/v2/models/broken/infer", 400, "'broken' failed to load"),
            ("/v2/models/nope/infer", 404, "")]:
        got = client.post(path, json=INFER if path.endswith("infer") else None)
        assert got.status_code == status, path
        assert set(got.get_json()) == {"error"} and words in got.get_json()["error"], path


def test_a_model_bigger_than_the_cap_is_refused(lazy_app: Any) -> None:
    app, _ = lazy_app(lazy_max_bytes=100)
    client = app.test_client()
    got = client.post("/v2/repository/models/m1/load")
    assert got.status_code == 400 and "PREDICT_LAZY_MAX_BYTES" in got.get_json()["error"]


def test_load_and_unload_of_the_root_are_admin_routes(lazy_app: Any) -> None:
    app, _ = lazy_app(admin_tokens="admin-token-0123456789", admin_loopback=False)
    client = app.test_client()
    assert client.post("/v2/repository/models/m1/load", environ_base=FAR_AWAY).status_code == 401
    done = client.post("/v2/repository/models/m1/load", environ_base=FAR_AWAY,
                       headers={"Authorization": "Bearer admin-token-0123456789"})
    assert done.status_code == 200


def test_the_same_over_grpc(model_config: dict[str, Any], tmp_path: Path) -> None:
    grpc = pytest.importorskip("grpc")
    service_pb2 = pytest.importorskip("tritonclient.grpc.service_pb2")
    service_pb2_grpc = pytest.importorskip("tritonclient.grpc.service_pb2_grpc")
    from tests.grpc_app import serving

    root = tmp_path / "root"
    train_linear(root / "m1", 1)
    for _, port in serving({"iris": model_config["iris"]}, lazy_root=str(root)):
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            train_linear(root / "late", 4)
            stub.RepositoryModelLoad(service_pb2.RepositoryModelLoadRequest(model_name="late"),
                                     timeout=30)
            models = stub.RepositoryIndex(service_pb2.RepositoryIndexRequest(), timeout=30)
            states = {model.name: (model.version, model.state) for model in models.models}
            assert states["late"] == ("1", "READY")
            assert states["m1"] == ("", "UNAVAILABLE")
            stub.RepositoryModelUnload(
                service_pb2.RepositoryModelUnloadRequest(model_name="late"), timeout=30)
            with pytest.raises(grpc.RpcError) as missing:
                stub.RepositoryModelLoad(
                    service_pb2.RepositoryModelLoadRequest(model_name="nope"), timeout=30)
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
