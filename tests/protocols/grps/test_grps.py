"""grps /grps/v1 conformance, through the Flask test client."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import codecs
from flask_predict.errors import ConfigError, InvalidInput
from flask_predict.observability.logs import JsonFormatter
from flask_predict.protocols.grps import gmap, wire, yaml_text
from flask_predict.types import Signature, TensorSpec
from tests.conftest import AppFactory
from tests.protocols.grps.models import make_grps_models
from tests.protocols.compare import assert_json_close

CASES = sorted((Path(__file__).parent / "cases").glob("*.request.json"))
PREDICT = "/grps/v1/infer/predict"
OK = {"code": 200, "msg": "OK", "status": "SUCCESS"}


@pytest.fixture(scope="module")
def grps_models(tmp_path_factory: pytest.TempPathFactory,
                model_config: dict[str, Any]) -> dict[str, Any]:
    return {**model_config, **make_grps_models(tmp_path_factory.mktemp("grps_models"))}


@pytest.fixture()
def grps_app(make_app: AppFactory, grps_models: dict[str, Any], tmp_path: Path) -> Flask:
    return make_app(grps_models, grps_default_model="iris", state_dir=str(tmp_path / "state"))


@pytest.fixture()
def grps(grps_app: Flask) -> FlaskClient:
    return grps_app.test_client()


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name.split(".")[0])
def test_case(grps: FlaskClient, case: Path) -> None:
    sent = json.loads(case.read_text())
    expected = json.loads(case.with_name(case.name.replace(".request.", ".expected.")).read_text())
    data = sent["text"] if "text" in sent else (
        json.dumps(sent["body"]) if "body" in sent else None)
    content_type = sent.get("content_type", "application/json")
    kwargs = {"content_type": content_type} if content_type else {}
    got = grps.open(sent["path"], method=sent["method"], data=data, **kwargs)
    assert got.status_code == expected["status"], got.data
    assert got.content_type == "application/json"
    body = got.get_json()
    assert body["status"]["code"] == got.status_code
    assert body["status"]["status"] == ("SUCCESS" if got.status_code == 200 else "FAILURE")
    assert "Traceback" not in body["status"]["msg"]
    assert_json_close(body, expected["body"], rel_tol=1e-3, abs_tol=1e-6)


# --- payloads beyond the cases ----------------------------------------------------------------

def test_octet_stream_in_and_out(grps: FlaskClient) -> None:
    raw = b"a\x00\x01bc\xffz"
    got = grps.post(PREDICT + "?model=mirror-1", data=raw,
                    content_type="application/octet-stream")
    assert got.status_code == 200
    assert got.content_type == "application/octet-stream"
    assert got.data == raw


def test_octet_stream_to_a_tensor_model_is_a_client_error(grps: FlaskClient) -> None:
    got = grps.post(PREDICT + "?model=iris", data=b"\x01\x02",
                    content_type="application/octet-stream")
    assert got.status_code == 400
    assert got.get_json()["status"]["status"] == "FAILURE"


def test_json_with_charset_is_accepted(grps: FlaskClient) -> None:
    got = grps.post(PREDICT, data='{"model": "mirror", "str_data": "hé"}',
                    content_type="application/json; charset=utf-8")
    assert got.get_json() == {"status": OK, "str_data": "hé"}


def test_every_dtype_round_trips_through_a_custom_predictor(grps: FlaskClient) -> None:
    """Each dtype is decoded from its flat field and reaches the custom routine as JSON
    values (which it answers with), so only the values are compared."""
    values = {"DT_UINT8": [0, 255], "DT_INT8": [-128, 127], "DT_INT16": [-32768, 32767],
              "DT_INT32": [-(2 ** 31), 2 ** 31 - 1], "DT_INT64": ["-9223372036854775808", "7"],
              "DT_FLOAT16": [0.5, -2.0], "DT_FLOAT32": [0.5, "Infinity"],
              "DT_FLOAT64": [0.1, "NaN"], "DT_STRING": ["a", "b"]}
    for dtype, flat in values.items():
        field = wire.DTYPES[dtype][2]
        body = {"model": "mirror", "gtensors": {"tensors": [
            {"dtype": dtype, "shape": [1, 2], field: flat}]}}
        got = grps.post(PREDICT, json=body)
        assert got.status_code == 200, (dtype, got.data)
        (tensor,) = got.get_json()["gtensors"]["tensors"]
        assert tensor["shape"] == [1, 2]
        back = tensor[wire.DTYPES[tensor["dtype"]][2]]
        if dtype in ("DT_FLOAT16", "DT_FLOAT32", "DT_FLOAT64"):
            assert [str(v) for v in back] == [str(float(v)) if not isinstance(v, str) else v
                                              for v in flat], dtype
        elif dtype == "DT_STRING":
            assert back == flat
        else:
            assert [int(v) for v in back] == [int(v) for v in flat], dtype


def test_custom_predictor_gets_tensors_and_returns_them_tensor_for_tensor(
        grps: FlaskClient) -> None:
    """As grps hands a converter-less model its message: several tensors of different
    shapes and dtypes come back with their names, dtypes and shapes."""
    tensors = [{"name": "ids", "dtype": "DT_INT64", "shape": [2, 2],
                "flat_int64": ["1", "2", "9007199254740993", "-4"]},
               {"name": "words", "dtype": "DT_STRING", "shape": [3],
                "flat_string": ["a", "b", "ü"]},
               {"name": "pixels", "dtype": "DT_UINT8", "shape": [1, 2, 2],
                "flat_uint8": [0, 1, 254, 255]},
               {"name": "scores", "dtype": "DT_FLOAT32", "shape": [1],
                "flat_float32": [0.1]}]
    got = grps.post(PREDICT, json={"model": "mirror", "gtensors": {"tensors": tensors}})
    assert got.status_code == 200, got.data
    assert got.get_json()["gtensors"]["tensors"] == tensors


def test_custom_predictor_ndarray_comes_back_float32(grps: FlaskClient) -> None:
    got = grps.post(PREDICT, json={"model": "mirror", "ndarray": [[1, 2.5], [3, 0.1]]})
    assert got.get_json()["gtensors"] == {"tensors": [
        {"dtype": "DT_FLOAT32", "shape": [2, 2], "flat_float32": [1.0, 2.5, 3.0, 0.1]}]}
    unnamed = grps.post(PREDICT, json={"model": "mirror", "gtensors": {"tensors": [
        {"dtype": "DT_INT32", "shape": [1], "flat_int32": [7]},
        {"dtype": "DT_FLOAT64", "shape": [], "flat_float64": [0.5]}]}})
    assert unnamed.get_json()["gtensors"]["tensors"] == [
        {"dtype": "DT_INT32", "shape": [1], "flat_int32": [7]},
        {"dtype": "DT_FLOAT64", "flat_float64": [0.5]}]
    ndarray = grps.post(PREDICT + "?return-ndarray=true",
                        json={"model": "mirror", "ndarray": [[1, 2.5]]})
    assert ndarray.get_json() == {"status": {"code": 200, "msg": "OK", "status": "SUCCESS"},
                                  "ndarray": [[1.0, 2.5]]}


def test_output_that_cannot_be_sent_is_the_servers_failure(grps: FlaskClient) -> None:
    """grps answers its server-error status when the output cannot become what the
    request asked for."""
    got = grps.post(PREDICT + "?return-ndarray=true",
                    json={"model": "mirror", "gtensors": {"tensors": [
                        {"dtype": "DT_STRING", "shape": [1], "flat_string": ["x"]}]}})
    assert got.status_code == 500
    assert got.get_json()["status"] == {
        "code": 500, "msg": "No float32 tensors in output. Cannot convert to ndarray.",
        "status": "FAILURE"}


def test_flat_float32_prints_the_shortest_float32() -> None:
    tensor = wire.encode_tensor("x", np.array([0.1, 1e-8], np.float32))
    assert b'"flat_float32":[0.1,1e-8]' in codecs.dumps(tensor)


@pytest.mark.tensorflow
def test_tensorflow_over_gtensors_and_ndarray(make_app: AppFactory, tmp_path: Path,
                                             tfserving_models: Path) -> None:
    pytest.importorskip("flask_predict_tensorflow")
    base = tfserving_models / "saved_model_half_plus_two_cpu"
    app = make_app({"half": {"base_path": str(base), "predictor": "tensorflow"}},
                   state_dir=str(tmp_path))
    client = app.test_client()
    got = client.post(PREDICT, json={"ndarray": [[1.0], [2.0], [5.0]]})
    assert got.status_code == 200, got.data
    (tensor,) = got.get_json()["gtensors"]["tensors"]
    assert tensor["dtype"] == "DT_FLOAT32" and tensor["shape"] == [3, 1]
    assert tensor["flat_float32"] == [2.5, 3.0, 4.5]
    got = client.post(PREDICT + "?return-ndarray=true", json={"model": "half", "gtensors": {
        "tensors": [{"name": "x", "dtype": "DT_FLOAT32", "shape": [2, 1],
                     "flat_float32": [0, 4]}]}})
    assert got.get_json() == {"status": OK, "ndarray": [[2.0], [4.0]]}


# --- model selection --------------------------------------------------------------------------

def test_no_model_and_no_default_among_several_is_a_client_error(
        make_app: AppFactory, grps_models: dict[str, Any], tmp_path: Path) -> None:
    client = make_app(grps_models, state_dir=str(tmp_path)).test_client()
    got = client.post(PREDICT, json={"str_data": "x"})
    assert got.status_code == 400
    assert "PREDICT_GRPS_DEFAULT_MODEL" in got.get_json()["status"]["msg"]


def test_the_only_model_is_the_default(make_app: AppFactory, grps_models: dict[str, Any],
                                       tmp_path: Path) -> None:
    client = make_app({"mirror": grps_models["mirror"]}, state_dir=str(tmp_path)).test_client()
    assert client.post(PREDICT, json={"str_data": "x"}).get_json()["str_data"] == "x"


def test_default_model_with_version(make_app: AppFactory, grps_models: dict[str, Any],
                                    tmp_path: Path) -> None:
    client = make_app(grps_models, grps_default_model="mirror-1",
                      state_dir=str(tmp_path)).test_client()
    assert client.post(PREDICT, json={"str_data": "x"}).get_json()["str_data"] == "x"


def test_unknown_default_model_stops_the_app_at_boot(make_app: AppFactory,
                                                     grps_models: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="PREDICT_GRPS_DEFAULT_MODEL"):
        make_app(grps_models, grps_default_model="nope")


def test_version_label_selects_a_version(make_app: AppFactory, grps_models: dict[str, Any],
                                         tmp_path: Path) -> None:
    models = {"mirror": {**grps_models["mirror"], "version_labels": {"stable": 1}}}
    client = make_app(models, state_dir=str(tmp_path)).test_client()
    got = client.post(PREDICT, json={"model": "mirror-stable", "str_data": "x"})
    assert got.get_json()["str_data"] == "x"


def test_url_prefix(make_app: AppFactory, grps_models: dict[str, Any], tmp_path: Path) -> None:
    client = make_app({"mirror": grps_models["mirror"]}, url_prefix="/api",
                      state_dir=str(tmp_path)).test_client()
    assert client.get("/api/grps/v1/health/live").status_code == 200
    assert client.post("/api/grps/v1/infer/predict",
                       json={"str_data": "x"}).get_json()["str_data"] == "x"


def test_predict_is_post_only(grps: FlaskClient) -> None:
    assert grps.get(PREDICT).status_code == 405


# --- streaming --------------------------------------------------------------------------------

def stream(client: FlaskClient, order: dict[str, Any]) -> tuple[int, str, list[bytes]]:
    got = client.post(PREDICT + "?streaming=true",
                      json={"model": "countdown", "str_data": json.dumps(order)})
    chunks = [chunk for chunk in got.response if chunk]  # type: ignore[union-attr]
    return got.status_code, got.content_type, chunks


def test_streaming_sends_one_chunk_per_message(grps: FlaskClient) -> None:
    status, content_type, chunks = stream(grps, {"count": 3})
    assert status == 200 and content_type == "application/octet-stream"
    assert [json.loads(c) for c in chunks] == [
        {"status": OK, "str_data": f"chunk-{i}"} for i in (1, 2, 3)]
    assert all(c.endswith(b"}\n") and c.count(b"\n") == 1 for c in chunks)


def test_a_stream_runs_in_its_request_scope_to_the_last_chunk(
        make_app: AppFactory, grps_models: dict[str, Any], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """What the predictor logs while it streams carries the request's id, and the request's
    access line and metrics are written after its last chunk, with the whole stream's size."""
    app = make_app(grps_models, access_log="json", state_dir=str(tmp_path / "state"))
    lines: list[dict[str, Any]] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(  # type: ignore[method-assign]
        json.loads(JsonFormatter().format(record)))
    countdown = logging.getLogger("tests.countdown")
    countdown.addHandler(handler)
    try:
        with caplog.at_level(logging.INFO):
            got = app.test_client().post(
                PREDICT + "?streaming=true", headers={"X-Request-ID": "stream-1"},
                json={"model": "countdown", "str_data": json.dumps({"count": 3, "log": True})})
            assert not [r for r in caplog.records if r.name == "flask_predict.access"]
            chunks = list(got.response)  # type: ignore[arg-type]
            got.close()
    finally:
        countdown.removeHandler(handler)
    assert [(line["message"], line.get("request_id")) for line in lines] == [
        (f"chunk-{i}", "stream-1") for i in (1, 2, 3)]
    names = [r.name for r in caplog.records if r.name in ("tests.countdown",
                                                          "flask_predict.access")]
    assert names == ["tests.countdown"] * 3 + ["flask_predict.access"]
    access = json.loads([r for r in caplog.records if r.name == "flask_predict.access"][0]
                        .getMessage())
    assert (access["request_id"], access["status"], access["response_bytes"]) == (
        "stream-1", 200, sum(len(c) for c in chunks))
    series = app.extensions["predict"].metrics.exposition()[0].decode()
    assert ('flask_predict_requests_total{code="200",model="countdown",protocol="grps",'
            'verb="predict",version="1"} 1.0') in series


def test_streaming_binary_messages_are_raw_bytes(grps: FlaskClient) -> None:
    _, _, chunks = stream(grps, {"count": 2, "binary": True})
    assert chunks == [b"\x00chunk-1", b"\x00chunk-2"]


def test_streaming_failure_after_the_first_message_is_a_failure_chunk(
        grps: FlaskClient) -> None:
    status, _, chunks = stream(grps, {"count": 3, "fail_at": 2})
    assert status == 200
    assert json.loads(chunks[0])["str_data"] == "chunk-1"
    assert json.loads(chunks[1]) == {"status": {
        "code": 500, "msg": "model 'countdown' failed while streaming", "status": "FAILURE"}}
    assert len(chunks) == 2


def test_streaming_failure_at_once_gets_an_error_status(grps: FlaskClient) -> None:
    got = grps.post(PREDICT + "?streaming=true",
                    json={"model": "countdown", "str_data": json.dumps({"count": 2,
                                                                       "fail_at": 1})})
    assert got.status_code == 500
    assert got.get_json()["status"]["status"] == "FAILURE"


def test_streaming_a_model_that_returns_a_list_is_one_message(grps: FlaskClient) -> None:
    got = grps.post(PREDICT + "?streaming=true", json={"model": "mirror", "str_data": "x"})
    assert list(got.response) == [b'{"status":{"code":200,"msg":"OK","status":"SUCCESS"},'  # type: ignore[arg-type]
                                  b'"str_data":"x"}\n']


def test_streaming_tensors_is_one_message(grps: FlaskClient) -> None:
    got = grps.post(PREDICT + "?streaming=true", json={"ndarray": [[5.1, 3.5, 1.4, 0.2]]})
    (chunk,) = list(got.response)  # type: ignore[arg-type]
    assert json.loads(chunk)["gtensors"]["tensors"][0]["name"] == "predict_proba"


def test_unary_call_of_a_streaming_model_fails_with_the_envelope(grps: FlaskClient) -> None:
    got = grps.post(PREDICT, json={"model": "countdown", "str_data": '{"count": 1}'})
    assert got.status_code == 500
    assert got.get_json()["status"]["msg"].startswith("model 'countdown' returned generator")


# --- health: one state for every app that shares the folder -----------------------------------

def test_offline_and_online_flip_readiness_not_predict(grps: FlaskClient) -> None:
    assert grps.get("/grps/v1/health/ready").status_code == 200
    assert grps.get("/grps/v1/health/offline").get_json() == {"status": OK}
    got = grps.get("/grps/v1/health/ready")
    assert got.status_code == 503
    assert got.get_json() == {"status": {"code": 503, "msg": "Service Unavailable",
                                         "status": "FAILURE"}}
    assert grps.get("/grps/v1/health/live").status_code == 200
    assert grps.post(PREDICT, json={"model": "mirror", "str_data": "x"}).status_code == 200
    assert grps.post("/grps/v1/health/online").status_code == 200
    assert grps.get("/grps/v1/health/ready").status_code == 200


def test_apps_sharing_a_state_dir_share_the_online_flag(
        make_app: AppFactory, grps_models: dict[str, Any], tmp_path: Path) -> None:
    models = {"mirror": grps_models["mirror"]}
    first = make_app(models, state_dir=str(tmp_path)).test_client()
    first.get("/grps/v1/health/offline")
    # a worker that boots later must not reset the flag to the start setting
    second = make_app(models, state_dir=str(tmp_path)).test_client()
    assert second.get("/grps/v1/health/ready").status_code == 503
    second.get("/grps/v1/health/online")
    assert first.get("/grps/v1/health/ready").status_code == 200


def test_start_offline_setting(make_app: AppFactory, grps_models: dict[str, Any],
                               tmp_path: Path) -> None:
    client = make_app({"mirror": grps_models["mirror"]}, grps_start_online="false",
                      state_dir=str(tmp_path)).test_client()
    assert client.get("/grps/v1/health/ready").status_code == 503
    client.get("/grps/v1/health/online")
    assert client.get("/grps/v1/health/ready").status_code == 200


def test_embedded_app_without_state_dir_has_a_private_folder(
        make_app: AppFactory, grps_models: dict[str, Any]) -> None:
    models = {"mirror": grps_models["mirror"]}
    first = make_app(models).test_client()
    second = make_app(models).test_client()
    first.get("/grps/v1/health/offline")
    assert first.get("/grps/v1/health/ready").status_code == 503
    assert second.get("/grps/v1/health/ready").status_code == 200


# --- metadata ---------------------------------------------------------------------------------

def test_server_metadata_lists_every_model(grps: FlaskClient) -> None:
    for method in ("GET", "POST"):
        body = grps.open("/grps/v1/metadata/server", method=method).get_json()
        assert body["status"] == OK
        text = body["str_data"]
        for name in ("iris", "xgb", "echo", "mirror", "countdown"):
            assert f'name: "{name}"' in text
        assert 'default_model: "iris"' in text


def test_model_metadata_describes_inputs_and_outputs(grps: FlaskClient) -> None:
    text = grps.post("/grps/v1/metadata/model", json={"str_data": "iris"}).get_json()["str_data"]
    assert text.splitlines()[:4] == ['name: "iris"', "versions:", "  - 1", "version: 1"]
    assert 'dtype: "DT_FLOAT64"' in text and 'name: "predict_proba"' in text


# --- monitor ----------------------------------------------------------------------------------

def test_metrics_count_inference_requests_of_every_protocol(
        make_app: AppFactory, grps_models: dict[str, Any]) -> None:
    client = make_app({"mirror": grps_models["mirror"], "iris": grps_models["iris"]},
                      grps_default_model="mirror").test_client()
    for _ in range(3):
        client.post(PREDICT, json={"str_data": "x"})
    client.post(PREDICT, json={"str_data": "fail"})
    client.post(PREDICT, json={"bad": 1})
    row = [[5.1, 3.5, 1.4, 0.2]]
    assert client.post("/v1/models/iris:predict", json={"instances": row}).status_code == 200
    assert client.post("/v2/models/iris/infer", json={"inputs": [
        {"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": row[0]}]}
                       ).status_code == 200
    assert client.get("/v2/health/ready").status_code == 200  # not an inference request
    values = client.get("/grps/v1/monitor/metrics?format=json").get_json()
    assert values["workers"] == 1
    assert values["*request_count"] == 7 and values["*fail_count"] == 2
    assert values["*fail_rate(%)"] == round(200 / 7, 3)
    assert values["*latency_max(ms)"] >= values["*latency_avg(ms)"] > 0
    assert set(values["*latency_cdf(ms)"]) == {"p50", "p90", "p99", "p99.9"}
    page = client.get("/grps/v1/monitor/metrics", headers={"Accept": "text/html"})
    assert page.content_type.startswith("text/html")
    assert b"*request_count</th><td>7<" in page.data


def test_metrics_series(grps: FlaskClient) -> None:
    grps.post(PREDICT, json={"model": "mirror", "str_data": "x"})
    first = grps.get("/grps/v1/monitor/series?name=*qps").get_json()
    assert first == {"label": "trend", "data": []}  # one snapshot: no interval yet
    for _ in range(3):
        grps.post(PREDICT, json={"model": "mirror", "str_data": "x"})
    time.sleep(0.6)  # snapshots closer than half a second replace each other
    trend = grps.get("/grps/v1/monitor/series?name=*qps").get_json()
    assert trend["label"] == "trend" and len(trend["data"]) == 1
    assert trend["data"][0][1] > 0
    cdf = grps.get("/grps/v1/monitor/series?name=*latency_cdf(ms)").get_json()
    assert cdf["label"] == "cdf" and cdf["data"][0][0] == 10
    values = [v for _, v in cdf["data"]]
    assert values == sorted(values) and values[-1] > 0
    got = grps.get("/grps/v1/monitor/series?name=nope")
    assert got.status_code == 404 and got.get_json()["status"]["status"] == "FAILURE"


def test_monitor_without_metrics_is_unimplemented(
        make_app: AppFactory, grps_models: dict[str, Any]) -> None:
    client = make_app({"mirror": grps_models["mirror"]}, metrics=False).test_client()
    got = client.get("/grps/v1/monitor/metrics?format=json")
    assert got.status_code == 501 and got.get_json()["status"]["code"] == 501


# --- wire functions ---------------------------------------------------------------------------

def test_encode_tensor_leaves_out_defaults_and_widens_types_grps_lacks() -> None:
    assert wire.encode_tensor("", np.zeros((0, 2), np.float32)) == {
        "dtype": "DT_FLOAT32", "shape": [0, 2]}
    assert wire.encode_tensor("s", np.array(3, np.int32)) == {
        "name": "s", "dtype": "DT_INT32", "flat_int32": [3]}
    assert wire.encode_tensor("b", np.array([True, False])) == {
        "name": "b", "dtype": "DT_UINT8", "shape": [2], "flat_uint8": [1, 0]}
    assert wire.encode_tensor("u", np.array([2 ** 32 - 1], np.uint32))["flat_int64"] == [
        "4294967295"]
    assert wire.encode_tensor("f", np.array([np.nan, -np.inf], np.float64))[
        "flat_float64"] == ["NaN", "-Infinity"]
    assert wire.encode_tensor("g", np.array([0.1, np.inf], np.float32))[
        "flat_float32"] == [0.1, "Infinity"]
    assert wire.encode_tensor("h", np.array([0.5], np.float16)) == {
        "name": "h", "dtype": "DT_FLOAT16", "shape": [1], "flat_float16": np.float32([0.5])}


def test_bind_inputs_positional_and_named() -> None:
    signature = Signature(inputs=(TensorSpec("a", "FP32", None), TensorSpec("b", "FP32", None)),
                          outputs=())
    one, two = np.zeros(1), np.ones(1)
    assert list(wire.bind_inputs([("", one), ("", two)], signature)) == ["a", "b"]
    assert list(wire.bind_inputs([("x", one)], signature)) == ["x"]
    with pytest.raises(InvalidInput, match="name them"):
        wire.bind_inputs([("", one)], signature)


def test_encode_predictions_kinds() -> None:
    assert wire.encode_predictions(["x"]) == ("str_data", "x")
    assert wire.encode_predictions([b"x"]) == ("bin_data", b"x")
    assert wire.encode_predictions([{"s_i64": {"k": 2 ** 40}}]) == (
        "gmap", {"s_i64": {"k": str(2 ** 40)}})
    assert gmap.encode_gmap({"s_f": {"a": np.float32(0.1), "b": float("nan")},
                             "s_d": {"a": 0.1}, "s_b": {"a": "hi"}, "s_s": {}}) == {
        "s_f": {"a": 0.1, "b": "NaN"}, "s_d": {"a": 0.1}, "s_b": {"a": "aGk="}}
    kind, outputs = wire.encode_predictions([1.5, 2.5])
    assert kind == "outputs" and outputs["predictions"].tolist() == [1.5, 2.5]


def test_to_yaml() -> None:
    text = yaml_text.to_yaml({"a": [1, {"b": "x y", "c": []}], "d": None, "e": {}})
    assert text == 'a:\n  - 1\n  - b: "x y"\n    c: []\nd: null\ne: {}\n'


@pytest.mark.parametrize("values", [
    [[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3]],  # read straight into a matrix
    [[5, 3, 1, 0]],                                 # integers
    [[1e39, 3.5, 1.4, 0.2]],                        # past float32: 400 either way
    [[5.1, 3.5, 1.4]],                              # too narrow for the model
])
def test_an_ndarray_body_answers_as_the_full_decode_does(grps: FlaskClient,
                                                         values: list[list[float]]) -> None:
    alone = grps.post(PREDICT, json={"ndarray": values})  # only key: the matrix path
    decoded = grps.post(PREDICT, json={"ndarray": values, "model": ""})  # the JSON values
    assert (alone.status_code, alone.get_json()) == (decoded.status_code, decoded.get_json())



@pytest.mark.parametrize("query", [
    "model=lr", "model=lr&model=other", "streaming=True&return-ndarray=", "model",
    "model=%E4%BD%A0", "model=%FF%FE&x=1", "a=1;b=2&model=m+n", "=v&model=",
    "model=caf\u00e9",  # not ASCII: Werkzeug's own parse
])
def test_the_query_reads_as_request_args_reads_it(grps_app: Flask, query: str) -> None:
    from flask_predict.protocols.grps.views import _query

    with grps_app.test_request_context(PREDICT + "?" + query, method="POST"):
        from flask import request

        parsed = _query()
        expected = request.args
        assert {key: parsed.get(key) for key in expected} == \
            {key: expected.get(key) for key in expected}
        assert set(parsed) == set(expected)
