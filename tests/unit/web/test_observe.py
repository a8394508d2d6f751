"""Request ids, the access log and the Prometheus endpoint of an embedded app."""

from __future__ import annotations

import io
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from flask import Response, request
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from flask_predict.observability import access_log
from flask_predict.web.current import get_state
from tests.conftest import AppFactory

ROW = [5.1, 3.5, 1.4, 0.2]
V2_BODY = {"inputs": [{"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}


@pytest.fixture()
def observed(make_app: AppFactory, model_config: dict[str, Any]) -> FlaskClient:
    return make_app({"iris": model_config["iris"], "echo": model_config["echo"]},
                    metrics_path="/metrics").test_client()


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "flask_predict.access"]


def samples(client: FlaskClient, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of series *name* (a sample name, such as ``x_total`` or ``x_count``)."""
    text = client.get("/metrics").get_data(as_text=True)
    return [(s.labels, s.value) for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name]


def value(client: FlaskClient, name: str, **labels: str) -> float:
    return sum(v for got, v in samples(client, name)
               if all(got.get(k) == want for k, want in labels.items()))


def test_request_id_echoed_generated_or_replaced(observed: FlaskClient,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "flask_predict.access")
    path = "/v1/models/iris:predict"
    got = observed.post(path, json={"instances": [ROW]}, headers={"X-Request-ID": "abc-42"})
    assert got.status_code == 200 and got.headers["X-Request-ID"] == "abc-42"
    made = observed.post(path, json={"instances": [ROW]}).headers["X-Request-ID"]
    again = observed.post(path, json={"instances": [ROW]}).headers["X-Request-ID"]
    assert made and again and made != again
    forged = observed.post(path, json={"instances": [ROW]},
                           headers={"X-Request-ID": "a b status=500"}).headers["X-Request-ID"]
    assert forged != "a b status=500" and " " not in forged
    lines = access_lines(caplog)
    assert len(lines) == 4
    assert lines[0].startswith("request_id=abc-42 client=127.0.0.1 method=POST "
                               "path=/v1/models/iris:predict protocol=tfserving verb=predict "
                               "model=iris version=1 status=200 request_bytes=")
    assert " ms=" in lines[0] and f"request_id={made} " in lines[1]


def test_v2_body_id_names_the_request(observed: FlaskClient,
                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "flask_predict.access")
    got = observed.post("/v2/models/iris/infer", json={**V2_BODY, "id": "v2-req-7"})
    assert got.status_code == 200 and got.get_json()["id"] == "v2-req-7"
    assert got.headers["X-Request-ID"] == "v2-req-7"
    header_wins = observed.post("/v2/models/iris/infer", json={**V2_BODY, "id": "body"},
                                headers={"X-Request-ID": "header"})
    assert header_wins.headers["X-Request-ID"] == "header"
    assert access_lines(caplog)[0].startswith("request_id=v2-req-7 ")


def test_failures_and_unknown_models_are_logged_without_url_names(
        observed: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "flask_predict.access")
    assert observed.post("/v1/models/nope%0Aforged:predict", json={}).status_code in (400, 404)
    assert observed.post("/v2/models/iris/infer", data=b"{oops").status_code == 400
    first, second = access_lines(caplog)
    assert "\n" not in first and 'path="/v1/models/nope\\nforged:predict"' in first
    assert "model=- version=-" in first  # no model was resolved: no label from the URL
    assert "model=iris version=1 status=400" in second
    assert value(observed, "flask_predict_requests_total", model="nope\nforged") == 0
    assert value(observed, "flask_predict_requests_total", model="", protocol="tfserving") == 1


def test_json_lines_and_the_off_switch(make_app: AppFactory, model_config: dict[str, Any],
                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "flask_predict.access")
    models = {"iris": model_config["iris"]}
    json_client = make_app(models, access_log="json").test_client()
    json_client.post("/v1/projects/p/models/iris:predict", json={"instances": [ROW]},
                     headers={"X-Request-ID": "j-1"})
    line = json.loads(access_lines(caplog)[0])
    assert {k: line[k] for k in ("request_id", "protocol", "verb", "model", "version",
                                 "status", "method", "client")} == {
        "request_id": "j-1", "protocol": "aiplatform", "verb": "predict", "model": "iris",
        "version": "1", "status": 200, "method": "POST", "client": "127.0.0.1"}
    assert line["response_bytes"] > 0 and line["ms"] >= line["predict_ms"] > 0
    caplog.clear()
    quiet = make_app(models, access_log=False).test_client()
    assert quiet.post("/v1/models/iris:predict", json={"instances": [ROW]}).status_code == 200
    assert access_lines(caplog) == []


def test_direct_stream_lines_carry_gunicorns_prefix() -> None:
    stream = io.StringIO()
    access_log.write_to(stream, json_lines=False)
    try:
        from flask_predict.request.record import RequestRecord

        record = RequestRecord("grps", "predict", "id-1", True, 10)
        access_log.AccessLog(False).write(record, 200, 5, record.started + 0.002)
    finally:
        access_log.write_to(None, json_lines=False)
    text = stream.getvalue()
    assert text.startswith("[") and "] [INFO] request_id=id-1 " in text
    assert text.endswith(" ms=2.000\n") and text.count("\n") == 1


def test_metrics_count_phases_sizes_and_loads(observed: FlaskClient) -> None:
    for _ in range(3):
        observed.post("/v2/models/iris/infer", json=V2_BODY)
    observed.post("/grps/v1/infer/predict", json={"model": "iris", "ndarray": [ROW]})
    observed.post("/v1/projects/p/models/echo:predict", json={"instances": [1]})
    assert observed.get("/v2/health/ready").status_code == 200
    got = observed.get("/metrics")
    assert got.status_code == 200 and got.content_type.startswith("text/plain")
    assert value(observed, "flask_predict_requests_total", protocol="kserve_v2", model="iris",
                 version="1", verb="predict", code="200") == 3
    assert value(observed, "flask_predict_requests_total", protocol="grps", code="200") == 1
    assert value(observed, "flask_predict_requests_total", verb="health") == 1
    for phase in ("request_preprocess_seconds", "request_predict_seconds",
                  "request_postprocess_seconds"):
        assert value(observed, phase + "_count", model_name="iris") == 4
        assert value(observed, phase + "_count", model_name="echo", protocol="aiplatform") == 1
    assert value(observed, "flask_predict_request_size_bytes_count", model="iris") == 4
    assert value(observed, "flask_predict_response_size_bytes_sum", model="iris") > 0
    assert value(observed, "flask_predict_model_load_seconds_count", model="iris") == 1
    assert value(observed, "flask_predict_model_versions_loaded", model="iris",
                 version="1") == 1
    assert value(observed, "flask_predict_requests_in_flight") == 0
    assert value(observed, "flask_predict_workers") == 1


def test_reload_failures_and_unloads_are_counted(make_app: AppFactory, model_root: Path,
                                                 tmp_path: Path) -> None:
    base = tmp_path / "iris"
    shutil.copytree(model_root / "iris" / "1", base / "1")
    app = make_app({"iris": {"base_path": str(base)}}, metrics_path="/metrics")
    client = app.test_client()
    repository, specs = get_state_of(app)
    (base / "2").mkdir()
    (base / "2" / "model.joblib").write_bytes(b"not a pickle")
    repository.sync(specs)
    assert value(client, "flask_predict_model_load_failures_total", model="iris",
                 version="2") == 1
    shutil.copytree(base / "1", base / "3")
    repository.sync(specs)
    assert value(client, "flask_predict_model_versions_loaded", version="3") == 1
    assert value(client, "flask_predict_model_versions_loaded", version="1") == 0


def get_state_of(app: Any) -> tuple[Any, Any]:
    with app.app_context():
        state = get_state()
        return state.service.repository, state.settings.models


def test_embedded_apps_serve_no_metrics_route_or_status_page(
        make_app: AppFactory, model_config: dict[str, Any]) -> None:
    client = make_app({"iris": model_config["iris"]}).test_client()
    assert client.get("/metrics").status_code == 404
    assert client.get("/").status_code == 404
    mounted = make_app({"iris": model_config["iris"]}, status_path="/ops/status",
                       metrics_path="/ops/metrics").test_client()
    page = mounted.get("/ops/status/")
    assert page.status_code == 200 and b"iris" in page.data
    script = mounted.get("/ops/status/_static/status.js")
    assert script.status_code == 200 and b"function" in script.data
    script.close()
    assert mounted.get("/ops/metrics").status_code == 200


def test_every_protocol_view_and_rpc_has_a_verb(make_app: AppFactory,
                                                model_config: dict[str, Any]) -> None:
    """Each route's and rpc's verb is its protocol descriptor's (none falls back to its own
    name), and every verb is one the metrics and access lines know."""
    from flask_predict.grpc.messages import POOL
    from flask_predict.request.protocol_table import descriptor, descriptors

    known = {"predict", "classify", "regress", "explain", "health", "metadata", "status",
             "admin", "monitor", "unknown", "other"}
    app = make_app({"iris": model_config["iris"]}, vertex_predict_route="/predict",
                   vertex_health_route="/health")
    for endpoint, view in app.view_functions.items():
        blueprint = endpoint.partition(".")[0]
        if blueprint.startswith("predict_") and blueprint.removeprefix("predict_") in \
                {protocol.name for protocol in descriptors()}:
            protocol = descriptor(blueprint.removeprefix("predict_"))
            assert view.__name__ in protocol.verbs, endpoint
            assert protocol.verb(view.__name__) in known
    for protocol in descriptors():
        for service in protocol.services:
            for method in POOL.FindServiceByName(service).methods:
                assert method.name in protocol.rpc_verbs, (service, method.name)
                assert protocol.rpc_verb(method.name) in known


def test_metrics_buckets_and_in_flight_count_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values at, under and over a histogram's first bound land where prometheus_client's
    own ``observe`` puts them; the in-flight gauge counts started minus finished."""
    from prometheus_client import CollectorRegistry, Histogram

    from flask_predict.observability import metrics as metrics_module
    from flask_predict.observability.metrics_files import MULTIPROC_VARIABLE
    from flask_predict.request.record import RequestRecord

    monkeypatch.delenv(MULTIPROC_VARIABLE, raising=False)
    metrics = metrics_module.Metrics()
    try:
        reference = Histogram("ref", "", buckets=metrics_module.LATENCY_BUCKETS,
                              registry=CollectorRegistry())
        sizes = Histogram("ref_sizes", "", buckets=metrics_module.SIZE_BUCKETS,
                          registry=CollectorRegistry())
        for _ in range(3):
            metrics.started()
        metrics.flush()
        assert metrics.in_flight._value.get() == 3
        for duration, size in [(0.0005, 256), (0.0001, 10), (0.0006, 257), (3.0, 10 ** 9)]:
            record = RequestRecord("p", "predict", "id", False, size)
            record.started = 0.0
            metrics.finished(record, 200, size, duration)
            reference.observe(duration)
            sizes.observe(size)
        metrics.flush()
        assert metrics.in_flight._value.get() == -1  # three started, four finished
        mine = metrics.duration.labels("p", "", "", "predict")
        assert [b.get() for b in mine._buckets] == [b.get() for b in reference._buckets]
        assert mine._sum.get() == pytest.approx(reference._sum.get())
        for child in (metrics.request_size.labels("p", "", "", "predict"),
                      metrics.response_size.labels("p", "", "", "predict")):
            assert [b.get() for b in child._buckets] == [b.get() for b in sizes._buckets]
    finally:
        metrics.close()


def test_probes_are_counted_but_not_access_logged_unless_asked(
        make_app: AppFactory, model_config: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    """A Kubernetes pod probes twice a second: those requests (the ``health`` verb of every
    protocol's descriptor) get no access line by default, and are still counted."""
    caplog.set_level(logging.INFO, "flask_predict.access")
    models = {"iris": model_config["iris"]}
    probes = ["/v2/health/live", "/v2/health/ready", "/v2/models/iris/ready",
              "/grps/v1/health/live", "/grps/v1/health/ready"]
    quiet = make_app(models, metrics_path="/metrics").test_client()
    for path in probes:
        assert quiet.get(path).status_code == 200, path
    assert quiet.post("/v1/models/iris:predict", json={"instances": [ROW]}).status_code == 200
    [line] = access_lines(caplog)
    assert "verb=predict" in line
    assert value(quiet, "flask_predict_requests_total", verb="health") == len(probes)
    caplog.clear()
    asked = make_app(models, access_log_probes=True).test_client()
    for path in probes:
        asked.get(path)
    assert [line.split(" path=")[1].split(" ")[0] for line in access_lines(caplog)] == probes


def test_a_large_scrape_gives_its_memory_back_after(make_app: AppFactory) -> None:
    """A scrape of thousands of series leaves millions of freed objects in the heap: its
    request is marked for the trim that runs once the answer went out (as a large body's)."""
    from flask_predict.core.state import EXTENSION_KEY
    from flask_predict.extension import close_app
    from flask_predict.request.record import RequestRecord
    from flask_predict.runtime import memory
    from flask_predict.web.observe import metrics_view

    app = make_app({}, metrics_path="/metrics")
    try:
        def scrape() -> tuple[int, bool]:
            with app.test_request_context("/metrics"):
                body = metrics_view()
                assert isinstance(body, Response)
                return len(body.get_data()), memory.ENVIRON_KEY in request.environ

        assert scrape()[1] is False
        metrics = app.extensions[EXTENSION_KEY].metrics
        for n in range(600):  # some 11 KB of series each
            record = RequestRecord("tfserving", "predict", "id", False, 100)
            record.model, record.version = f"m{n:04}", "1"
            metrics.finished(record, 200, 50, record.started + 0.001)
        size, marked = scrape()
        assert size >= memory.RELEASE_AFTER_BYTES and marked
    finally:
        close_app(app)
