"""The payload log (flask_predict.payload_log): its settings, how a kept body is rendered,
the sinks (a rotated file shared by processes, a CloudEvents receiver), sampling, and the
bounded queue that drops and counts when a sink is slow, never holding a request."""

from __future__ import annotations

import gzip
import io
import json
import math
import multiprocessing
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask

from flask_predict import FlaskPredict
from flask_predict.errors import ConfigError
from flask_predict.extension import close_app
from flask_predict.payload_log import (KeptBytes, KeptStream, PayloadLog, PayloadSettings,
                                       Policy, read_settings, render_bytes)
from flask_predict.payload_log import log as payload_log
from flask_predict.payload_log.cloudevents import CloudEventsSink
from flask_predict.settings.payload_log import DEFAULTS
from flask_predict.payload_log.sinks import FileSink
from flask_predict.request.record import RequestRecord
from flask_predict.types import ModelSpec

ROW = [5.1, 3.5, 1.4, 0.2]
FIELDS = {"time", "protocol", "verb", "model", "version", "request_id", "trace_id", "status",
          "latency_ms", "request", "request_encoding", "request_bytes", "request_truncated",
          "response", "response_encoding", "response_bytes", "response_truncated"}
TOKEN = "s3cret-token-for-tests"


def spec(name: str, payload_log: Any) -> ModelSpec:
    return ModelSpec(name=name, base_path="/nowhere", payload_log=payload_log)


# --- settings ---------------------------------------------------------------------------------

def read(models: tuple[ModelSpec, ...] = (), **keys: Any) -> PayloadSettings | None:
    return read_settings({**DEFAULTS, **{f"PREDICT_PAYLOAD_LOG{k}": v for k, v in keys.items()}},
                         models)


def test_off_unless_a_sink_is_named() -> None:
    assert read() is None
    assert read((spec("a", False),)) is None


def test_sinks(tmp_path: Path) -> None:
    assert read(**{"": "stdout"}).default == Policy("stdout", 1.0, "all")  # type: ignore
    path = tmp_path / "p.jsonl"
    assert read(**{"": str(path)}).default.sink == f"file:{path}"  # type: ignore
    assert read(**{"": f"file://{path}"}).default.sink == f"file:{path}"  # type: ignore
    assert read(**{"": "http://logger:8080/e"}).default.sink == "http://logger:8080/e"  # type: ignore
    for bad, why in ((str(tmp_path / "none" / "p.jsonl"), "does not exist"),
                     ("http://user:pw@logger/", "no user or password"), (3, "file path")):
        with pytest.raises(ConfigError, match=why):
            read(**{"": bad})


def test_sampling_and_mode_are_checked() -> None:
    for key, bad in (("_SAMPLING", 1.5), ("_SAMPLING", True), ("_MODE", "both")):
        with pytest.raises(ConfigError, match=f"PREDICT_PAYLOAD_LOG{key}"):
            read(**{"": "stdout", key: bad})


def test_a_model_of_its_own(tmp_path: Path) -> None:
    models = (spec("quiet", False), spec("same", True),
              spec("own", {"sampling": 0.1, "mode": "request"}),
              spec("elsewhere", {"sink": str(tmp_path / "x.jsonl")}))
    found = read(models, **{"": "stdout", "_SAMPLING": 0.5})
    assert found is not None
    assert found.policy("quiet") is None
    assert found.policy("same") == found.policy("other") == Policy("stdout", 0.5, "all")
    assert found.policy("own") == Policy("stdout", 0.1, "request")
    assert found.policy("elsewhere") == Policy(f"file:{tmp_path / 'x.jsonl'}", 0.5, "all")
    assert found.top_rate() == 0.5 and found.sinks() == {"stdout", f"file:{tmp_path}/x.jsonl"}
    only = read((spec("own", {"sink": "stdout", "sampling": 0.2}),))
    assert only is not None and only.default is None and only.policy("other") is None
    for entry, why in ((True, "names no sink"), ({"rate": 1}, "must be true, false"),
                       ({"mode": "all"}, "names no sink")):
        with pytest.raises(ConfigError, match=why):
            read((spec("m", entry),))


def test_a_model_entry_through_the_model_config(make_app: Any, model_config: dict[str, Any],
                                                tmp_path: Path) -> None:
    iris = {**model_config["iris"], "payload_log": {"sink": str(tmp_path / "p.jsonl")}}
    app = make_app({"iris": iris})
    settings = app.extensions["predict"].settings
    assert settings.observability.payload_log.policy("iris").sink == f"file:{tmp_path}/p.jsonl"
    assert "payload_log" not in settings.model("iris").options


# --- kept bodies ------------------------------------------------------------------------------

def test_bodies_render_as_json_text_or_base64_and_are_cut_at_the_cap() -> None:
    assert render_bytes(b'{"x": [1, NaN]}', 15, 100).value["x"][0] == 1
    assert math.isnan(render_bytes(b'{"x": [1, NaN]}', 15, 100).value["x"][1])
    assert render_bytes(b"a,b\n1,2", 7, 100)[:2] == ("a,b\n1,2", "text")
    assert render_bytes(b"\xff\x00", 2, 100)[:2] == ("/wA=", "base64")
    body = json.dumps({"instances": [ROW] * 100}).encode()
    cut = KeptBytes(body).render(64)
    assert cut == (body[:64].decode(), "text", len(body), True)
    assert KeptBytes(body).render(len(body)).encoding == "json"


def test_a_request_body_is_kept_as_the_view_reads_it() -> None:
    body = json.dumps({"instances": [ROW] * 50}).encode()
    kept = KeptStream(io.BytesIO(body), None, 101)
    assert kept.read(10) + kept.read() == body  # the view reads it all, unchanged
    assert kept.render(100) == (body[:100].decode(), "text", len(body), True)
    whole = KeptStream(io.BytesIO(body), None, len(body) + 1)
    whole.read()
    assert whole.render(len(body)).value == json.loads(body)


def test_a_compressed_request_body_is_kept_inflated() -> None:
    body = json.dumps({"instances": [ROW] * 50}).encode()
    packed = gzip.compress(body)
    kept = KeptStream(io.BytesIO(packed), "gzip", len(body) + 1)
    assert kept.read() == packed
    assert kept.render(len(body)) == (json.loads(body), "json", len(packed), False)
    assert kept.render(100) == (body[:100].decode(), "text", len(packed), True)


# --- sinks ------------------------------------------------------------------------------------

def record_of(number: int, size: int = 100) -> dict[str, Any]:
    return {"request_id": f"r{number}", "request": "x" * size}


def _write_many(path: str, start: int, count: int) -> None:
    sink = FileSink(path, 2000, 50)
    for number in range(start, start + count, 3):
        sink.write([record_of(n) for n in range(number, min(number + 3, start + count))])
    sink.close()


def test_a_file_rotates_by_size_and_workers_share_it(tmp_path: Path) -> None:
    path = str(tmp_path / "payloads.jsonl")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_write_many, args=(path, start, 150))
               for start in (0, 1000)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    files = sorted(tmp_path.glob("payloads.jsonl*"))
    names = {file.name for file in files}
    assert "payloads.jsonl.1" in names and "payloads.jsonl.lock" in names
    ids = []
    for file in files:
        if file.name.endswith(".lock"):
            continue
        assert file.stat().st_size <= 2000
        ids.extend(json.loads(line)["request_id"] for line in file.read_text().splitlines())
    assert sorted(ids) == sorted(f"r{n}" for n in (*range(150), *range(1000, 1150)))


def test_a_file_keeps_only_its_backups(tmp_path: Path) -> None:
    sink = FileSink(str(tmp_path / "p.jsonl"), 300, 2)
    for number in range(20):
        sink.write([record_of(number)])
    sink.close()
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "p.jsonl", "p.jsonl.1", "p.jsonl.2", "p.jsonl.lock"]


class Receiver(BaseHTTPRequestHandler):
    """Keeps every event POSTed to it; holds each answer until ``gate`` is set."""

    events: list[tuple[dict[str, str], bytes]] = []
    gate = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        data = self.rfile.read(int(self.headers["Content-Length"]))
        self.gate.wait(30)
        type(self).events.append((dict(self.headers), data))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("Handler", (Receiver,), {"events": [], "gate": threading.Event()})
    handler.gate.set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/events", handler
    handler.gate.set()
    server.shutdown()
    server.server_close()


def test_cloudevents_as_kserve_sends_them(receiver: tuple[str, type[Receiver]]) -> None:
    url, handler = receiver
    sink = CloudEventsSink(url, 5.0, "urn:test")
    record = {"time": "2026-01-01T00:00:00.000000Z", "protocol": "kserve_v2",
              "verb": "predict", "model": "iris", "version": "2", "request_id": "abc",
              "trace_id": "0af7651916cd43dd8448eb211c80319c", "status": 200,
              "latency_ms": 1.5, "request": {"inputs": []}, "request_encoding": "json",
              "request_bytes": 13, "request_truncated": False, "response": "cut",
              "response_encoding": "text", "response_bytes": 9000, "response_truncated": True}
    sink.write([record, {**record, "request_id": "def", "response": None,
                         "response_encoding": None, "response_truncated": False}])
    sink.close()
    assert len(handler.events) == 3  # the second record keeps no answer
    (request, data), (response, cut), (second, _) = handler.events
    headers = {k.lower(): v for k, v in request.items()}
    assert {k: headers[k] for k in ("ce-specversion", "ce-id", "ce-type", "ce-source",
                                    "ce-inferenceservicename", "ce-modelversion",
                                    "content-type", "ce-traceid")} == {
        "ce-specversion": "1.0", "ce-id": "abc",
        "ce-type": "org.kubeflow.serving.inference.request", "ce-source": "urn:test",
        "ce-inferenceservicename": "iris", "ce-modelversion": "2",
        "content-type": "application/json",
        "ce-traceid": "0af7651916cd43dd8448eb211c80319c"}
    assert json.loads(data) == {"inputs": []}
    response = {k.lower(): v for k, v in response.items()}
    assert response["ce-type"] == "org.kubeflow.serving.inference.response"
    assert (response["ce-id"], response["ce-statuscode"], response["ce-truncated"]) == \
        ("abc", "200", "true")
    assert cut == b"cut" and second["ce-id"] == "def"


def test_a_receiver_that_refuses_fails_the_record(tmp_path: Path) -> None:
    class Refuse(Receiver):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sink = CloudEventsSink(f"http://127.0.0.1:{server.server_port}/", 5.0, None)
        with pytest.raises(OSError, match="500"):
            sink.write([{"request_id": "a", "time": "t", "model": None, "version": None,
                         "protocol": "p", "verb": "predict", "status": 200,
                         "latency_ms": 1.0, "trace_id": None, "request": {},
                         "request_encoding": "json", "request_truncated": False,
                         "response": None, "response_encoding": None,
                         "response_truncated": False}])
        sink.close()
    finally:
        server.shutdown()
        server.server_close()


# --- sampling and the queue -------------------------------------------------------------------

class _Carrier:
    def keep_request(self, carrier: Any, limit: int) -> KeptBytes:
        return KeptBytes(b"{}")

    def keep_response(self, response: Any) -> KeptBytes:
        return KeptBytes(b"{}")


def opened(model: str = "m") -> RequestRecord:
    record = RequestRecord("tfserving", "predict", "id", False, 2)
    record.model = model
    return record


def test_each_model_is_sampled_at_its_own_rate(tmp_path: Path) -> None:
    settings = PayloadSettings(Policy("stdout", 0.5, "all"),
                               {"rare": Policy("stdout", 0.1, "all")}, queue=10_000)
    log = PayloadLog(settings)
    kept: dict[str, int] = {"m": 0, "rare": 0}
    log.writers["stdout"].put = lambda entry: kept.__setitem__(  # type: ignore[method-assign]
        entry.record.model, kept[entry.record.model] + 1)
    trials = 4000
    for model in kept:
        for _ in range(trials):
            record = opened(model)
            log.sample(record, None, _Carrier())  # type: ignore[arg-type]
            log.keep(record, 200, None, record.started)
    for model, rate in (("m", 0.5), ("rare", 0.1)):
        spread = 5 * math.sqrt(trials * rate * (1 - rate))
        assert abs(kept[model] - trials * rate) < spread, (model, kept[model])


def test_only_requests_that_run_a_model_are_sampled() -> None:
    log = PayloadLog(PayloadSettings(Policy("stdout", 1.0, "all")))
    record = RequestRecord("kserve_v2", "health", "id", False, 0)
    log.sample(record, None, _Carrier())  # type: ignore[arg-type]
    assert record.kept is None


class _Held:
    """A sink that holds its first write until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.written: list[dict[str, Any]] = []

    def write(self, records: list[dict[str, Any]]) -> None:
        self.entered.set()
        self.release.wait(30)
        self.written.extend(records)

    def close(self) -> None:
        pass


def test_a_slow_sink_drops_and_counts_and_never_holds_a_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    held = _Held()
    monkeypatch.setattr(payload_log, "open_sink", lambda name, settings: held)
    log = PayloadLog(PayloadSettings(Policy("stdout", 1.0, "all"), queue=4))
    first = opened()
    log.sample(first, None, _Carrier())  # type: ignore[arg-type]
    log.keep(first, 200, None, first.started)
    assert held.entered.wait(30)  # the writer holds the first record in its sink
    for _ in range(20):  # the queue takes 4, the rest are dropped at once
        record = opened()
        log.sample(record, None, _Carrier())  # type: ignore[arg-type]
        log.keep(record, 200, None, record.started)
    assert log.counts == {"written": 0, "dropped": 16, "failed": 0}
    held.release.set()
    log.shutdown()
    assert log.counts == {"written": 5, "dropped": 16, "failed": 0}
    assert len(held.written) == 5


# --- through an app ---------------------------------------------------------------------------

def test_every_protocol_logs_its_own_json_and_never_a_secret(
        model_config: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "payloads.jsonl"
    app = Flask("logged")
    app.config.update(PREDICT_MODELS={"iris": model_config["iris"]}, PREDICT_POLL_SECONDS=0,
                      PREDICT_PAYLOAD_LOG=str(path), PREDICT_AUTH_TOKENS=[TOKEN],
                      PREDICT_PAYLOAD_LOG_MAX_BODY_BYTES=2000)
    FlaskPredict(app)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {TOKEN}", "X-Request-ID": "req-1"}
    sent = {
        "/v1/projects/p/models/iris:predict": {"instances": [ROW]},
        "/v1/models/iris:predict": {"instances": [ROW]},
        "/v2/models/iris/infer": {"inputs": [{"name": "inputs", "shape": [1, 4],
                                              "datatype": "FP64", "data": ROW}]},
        "/grps/v1/infer/predict": {"model": "iris", "ndarray": [ROW]},
    }
    answers = {route: client.post(route, json=body, headers=auth) for route, body in sent.items()}
    big = {"instances": [ROW] * 200}
    client.post("/v1/models/iris:predict", json=big, headers=auth)
    client.post("/v1/models/iris:predict", data=gzip.compress(json.dumps(big).encode()),
                headers={**auth, "Content-Encoding": "gzip"})
    client.post("/v1/models/nope:predict", json={"instances": [ROW]}, headers=auth)
    client.get("/v2/models/iris", headers=auth)  # metadata: not logged
    client.post("/v1/models/iris:predict", json={"instances": [ROW]},  # 401: not logged
                headers={"Authorization": "Bearer not-the-token-at-all"})
    close_app(app)
    text = path.read_text()
    assert TOKEN not in text and "Bearer" not in text and "uthorization" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 7
    for record, (route, body) in zip(records, sent.items()):
        assert set(record) == FIELDS
        assert record["request"] == body and record["request_encoding"] == "json"
        assert record["response"] == answers[route].get_json()
        assert (record["model"], record["version"], record["status"], record["request_id"]) \
            == ("iris", "1", 200, "req-1")
        assert record["request_bytes"] == len(json.dumps(body))
        assert record["response_bytes"] == len(answers[route].data)
    assert [r["protocol"] for r in records[:4]] == ["aiplatform", "tfserving", "kserve_v2",
                                                     "grps"]
    cut, packed, missing = records[4:]
    assert cut["request_truncated"] and len(cut["request"]) == 2000
    assert cut["response_truncated"] == (cut["response_bytes"] > 2000)
    assert packed["request_truncated"] and packed["request"] == cut["request"]
    assert (missing["status"], missing["model"], missing["response_encoding"]) == \
        (404, None, "json")


def test_a_model_that_logs_only_requests(model_config: dict[str, Any],
                                         tmp_path: Path) -> None:
    path = tmp_path / "payloads.jsonl"
    app = Flask("requests_only")
    iris = {**model_config["iris"], "payload_log": {"sink": str(path), "mode": "request"}}
    app.config.update(PREDICT_MODELS={"iris": iris}, PREDICT_POLL_SECONDS=0)
    FlaskPredict(app)
    app.test_client().post("/v1/models/iris:predict", json={"instances": [ROW]})
    app.test_client().post("/v1/models/nope:predict", json={"instances": [ROW]})
    close_app(app)
    (record,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert record["request"] == {"instances": [ROW]}
    assert (record["response"], record["response_encoding"], record["response_bytes"]) == \
        (None, None, None)
