"""The payload log under real gunicorn with two workers: a sampled fraction of REST and gRPC
requests within binomial bounds, every field of every record, a file rotated by size and
shared by both workers, no token in any record; and a slow CloudEvents receiver whose
records are dropped and counted while every request is answered."""

from __future__ import annotations

import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from google.protobuf import json_format

from flask_predict.grpc.messages import message_class
from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import GunicornServer, request
from tests.e2e.test_observability_gunicorn import REQUESTS, eventually, total

pytestmark = pytest.mark.e2e

ROW = [5.1, 3.5, 1.4, 0.2]
TOKEN = "e2e-payload-log-token-0123456789"
FIELDS = {"time", "protocol", "verb", "model", "version", "request_id", "trace_id", "status",
          "latency_ms", "request", "request_encoding", "request_bytes", "request_truncated",
          "response", "response_encoding", "response_bytes", "response_truncated"}
REST_EACH = 60
GRPC_CALLS = 60
RATE = 0.3


def infer_message() -> Any:
    message = message_class("inference.ModelInferRequest")(model_name="iris")
    tensor = message.inputs.add(name="inputs", datatype="FP64", shape=[1, 4])
    tensor.contents.fp64_contents.extend(ROW)
    return message


def test_a_sampled_fraction_in_a_rotated_file(model_config: dict[str, Any],
                                              tmp_path: Path) -> None:
    path = tmp_path / "payloads.jsonl"
    env = {"FLASK_PREDICT_PAYLOAD_LOG": str(path), "FLASK_PREDICT_PAYLOAD_LOG_SAMPLING": str(RATE),
           "FLASK_PREDICT_PAYLOAD_LOG_FILE_MAX_BYTES": "6000",
           "FLASK_PREDICT_PAYLOAD_LOG_FILE_BACKUPS": "100",
           "FLASK_PREDICT_AUTH_TOKENS": TOKEN}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    sent: dict[str, Any] = {}  # request id -> the body or message sent
    with GrpcGunicornServer({"iris": model_config["iris"]}, workers=2, env=env) as server:
        def rest(job: tuple[str, int]) -> None:
            protocol, number = job
            route, body = REQUESTS[protocol]
            request_id = f"{protocol}-{number}"
            status, _, data = request("POST", server.url + route, body=body,
                                      headers={**auth, "X-Request-ID": request_id})
            assert status == 200, data
            sent[request_id] = body

        def rpc(number: int) -> None:
            request_id = f"grpc-{number}"
            with server.channel() as channel:
                call = channel.unary_unary(
                    "/inference.GRPCInferenceService/ModelInfer",
                    request_serializer=type(infer_message()).SerializeToString,
                    response_deserializer=message_class(
                        "inference.ModelInferResponse").FromString)
                call(infer_message(), timeout=30, metadata=[
                    ("authorization", f"Bearer {TOKEN}"), ("x-request-id", request_id)])
            sent[request_id] = json_format.MessageToDict(infer_message())

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(rest, [(p, n) for p in REQUESTS for n in range(REST_EACH)]))
            list(pool.map(rpc, range(GRPC_CALLS)))
    # stopped: each worker wrote what it kept before exiting
    files = sorted(tmp_path.glob("payloads.jsonl*"))
    texts = [file.read_text() for file in files if not file.name.endswith(".lock")]
    assert len(texts) >= 3  # rotated
    assert all(len(text.encode()) <= 6000 for text in texts)
    assert TOKEN not in "".join(texts) and "Bearer" not in "".join(texts)
    records = [json.loads(line) for text in texts for line in text.splitlines()]
    trials = len(REQUESTS) * REST_EACH + GRPC_CALLS
    spread = 5 * math.sqrt(trials * RATE * (1 - RATE))  # 5 standard deviations
    assert abs(len(records) - trials * RATE) < spread, len(records)
    assert len({r["request_id"] for r in records}) == len(records)
    for record in records:
        assert set(record) == FIELDS
        assert (record["model"], record["version"], record["status"], record["verb"]) == \
            ("iris", "1", 200, "predict")
        assert record["request"] == sent[record["request_id"]]
        assert record["request_encoding"] == record["response_encoding"] == "json"
        assert record["trace_id"] is None and record["latency_ms"] > 0
        protocol = record["request_id"].rpartition("-")[0]
        assert record["protocol"] == ("kserve_v2_grpc" if protocol == "grpc" else protocol)
    assert {r["protocol"] for r in records} == {*REQUESTS, "kserve_v2_grpc"}


class Held(BaseHTTPRequestHandler):
    """A CloudEvents receiver that answers nothing until ``gate`` is set."""

    events: list[dict[str, str]] = []
    gate = threading.Event()
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.gate.wait(120)
        with self.lock:
            self.events.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def held() -> Iterator[tuple[int, type[Held]]]:
    handler = type("Handler", (Held,), {"events": [], "gate": threading.Event(),
                                        "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, handler
    handler.gate.set()
    server.shutdown()
    server.server_close()


def test_a_slow_receiver_drops_and_counts_without_holding_requests(
        model_config: dict[str, Any], held: tuple[int, type[Held]]) -> None:
    port, handler = held
    queue, requests = 3, 40
    env = {"FLASK_PREDICT_PAYLOAD_LOG": f"http://127.0.0.1:{port}/events",
           "FLASK_PREDICT_PAYLOAD_LOG_QUEUE": str(queue),
           "FLASK_PREDICT_PAYLOAD_LOG_TIMEOUT_SECONDS": "120",
           "FLASK_PREDICT_AUTH_TOKENS": TOKEN}
    route, body = REQUESTS["kserve_v2"]
    with GunicornServer({"iris": model_config["iris"]}, workers=2, env=env) as server:
        for number in range(requests):  # answered while the receiver answers nothing
            status, _, data = request("POST", server.url + route, body=body, headers={
                "Authorization": f"Bearer {TOKEN}", "X-Request-ID": f"held-{number}"})
            assert status == 200, data
        headers = {"Authorization": f"Bearer {TOKEN}"}

        def counted(outcome: str) -> float:
            found = scrape_with(server, headers)
            return total(found, "flask_predict_payload_records_total", outcome=outcome)

        # each worker holds at most `queue` records in its queue and as many in the batch
        # its writer took from it (stuck in the sink)
        most_kept = 2 * 2 * queue
        eventually(lambda: [] if counted("dropped") >= requests - most_kept else _fail())
        assert counted("written") == 0 and counted("failed") == 0
        handler.gate.set()
        eventually(lambda: [] if counted("written") + counted("dropped") == requests
                   else _fail())
        written = counted("written")
        assert counted("failed") == 0 and 1 <= written <= most_kept
    assert len(handler.events) == 2 * written  # a request and a response event each
    for event in handler.events:
        assert event["ce-id"].startswith("held-") and event["ce-specversion"] == "1.0"
        assert "authorization" not in event and TOKEN not in json.dumps(event)


def scrape_with(server: GunicornServer, headers: dict[str, str]) -> Any:
    from prometheus_client.parser import text_string_to_metric_families

    status, _, data = request("GET", server.url + "/metrics", headers=headers)
    assert status == 200
    return [(s.name, s.labels, s.value)
            for family in text_string_to_metric_families(data.decode())
            for s in family.samples]


def _fail() -> Any:
    raise AssertionError("not yet")
