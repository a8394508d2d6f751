"""One request scope for REST and gRPC: the same request over both transports opens and
closes its scope in the one place (:class:`flask_predict.core.scope.Scopes`), and leaves the same
record, metrics and access line (but for the protocol's ``_grpc`` suffix and the path)."""

from __future__ import annotations

import json
import logging
from typing import Any, Iterator

import numpy as np
import pytest
from flask import Flask

from flask_predict.request.record import RequestRecord
from flask_predict.core.scope import Scopes
from tests import grpc_app

grpcclient = pytest.importorskip("tritonclient.grpc")

ROW = [5.1, 3.5, 1.4, 0.2]


@pytest.fixture()
def served(model_config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[tuple[Flask, int, list[tuple[str, str]]]]:
    calls: list[tuple[str, str]] = []
    opened, closed = Scopes.open, Scopes.close

    def spy_open(self: Scopes, protocol: str, verb: str, *args: Any, **kwargs: Any
                 ) -> RequestRecord:
        calls.append(("open", protocol))
        return opened(self, protocol, verb, *args, **kwargs)

    def spy_close(self: Scopes, record: RequestRecord, *args: Any) -> None:
        calls.append(("close", record.protocol))
        closed(self, record, *args)

    monkeypatch.setattr(Scopes, "open", spy_open)
    monkeypatch.setattr(Scopes, "close", spy_close)
    for app, port in grpc_app.serving({"iris": model_config["iris"]}, access_log="json"):
        yield app, port, calls


def test_rest_and_grpc_leave_the_same_record_metrics_and_access_line(
        served: tuple[Flask, int, list[tuple[str, str]]],
        caplog: pytest.LogCaptureFixture) -> None:
    app, port, calls = served
    body = {"id": "one-row", "inputs": [{"name": "inputs", "shape": [1, 4], "datatype": "FP64",
                                         "data": ROW}]}
    with caplog.at_level(logging.INFO, logger="flask_predict.access"):
        answer = app.test_client().post("/v2/models/iris/infer", json=body)
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        try:
            tensor = grpcclient.InferInput("inputs", [1, 4], "FP64")
            tensor.set_data_from_numpy(np.array([ROW]))
            result = client.infer("iris", [tensor], request_id="one-row")
        finally:
            client.close()
    assert answer.status_code == 200
    assert answer.get_json()["outputs"][0]["data"] == result.as_numpy("predict").tolist()
    assert calls == [("open", "kserve_v2"), ("close", "kserve_v2"),
                     ("open", "kserve_v2_grpc"), ("close", "kserve_v2_grpc")]
    rest, rpc = (json.loads(r.getMessage()) for r in caplog.records
                 if r.name == "flask_predict.access")
    differ = {"time", "ms", "predict_ms", "path", "protocol", "request_bytes",
              "response_bytes", "client"}
    assert {k: v for k, v in rest.items() if k not in differ} == \
        {k: v for k, v in rpc.items() if k not in differ}
    assert (rest["verb"], rest["model"], rest["version"], rest["status"],
            rest["request_id"]) == ("predict", "iris", "1", 200, "one-row")
    assert (rest["protocol"], rpc["protocol"]) == ("kserve_v2", "kserve_v2_grpc")
    assert (rest["path"], rpc["path"]) == (
        "/v2/models/iris/infer", "/inference.GRPCInferenceService/ModelInfer")
    assert rpc["client"] == "127.0.0.1" and rpc["request_bytes"] > 0
    series = app.extensions["predict"].metrics.exposition()[0].decode()
    for protocol in ("kserve_v2", "kserve_v2_grpc"):
        assert (f'flask_predict_requests_total{{code="200",model="iris",protocol="{protocol}",'
                f'verb="predict",version="1"}} 1.0') in series
