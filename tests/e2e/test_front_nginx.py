"""The documented front: nginx (deploy/nginx/) in front of 2 sync gunicorn workers, started by
the container's entry point (deploy/container/start) with its default command,
``flask-predict serve``, as the container starts them."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
from typing import Any, Iterator

import numpy as np
import pytest
import tritonclient.http as httpclient

from tests import models
from tests.e2e.server import load_benchmark

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx")]

harness = load_benchmark("harness")
front = load_benchmark("front")
slow_clients = load_benchmark("slow_clients")

LIMIT = 200_000
"""``FLASK_PREDICT_MAX_REQUEST_BYTES`` of the app, and so nginx's ``client_max_body_size``."""
IRIS = "/v1/projects/p/models/iris:predict"
FLOWER = [5.1, 3.5, 1.4, 0.2]


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("front")
    models.train_iris(root / "iris")
    config = {"iris": {"base_path": str(root / "iris")}}
    # the container's default command: flask-predict serve
    server = front.front(config, IRIS, root / "run", command=[], ready_path="/v2/health/ready",
                         ready_status=200,
                         env={"FLASK_PREDICT_MAX_REQUEST_BYTES": str(LIMIT)})
    with harness.started(server, log_dir=root) as running:
        yield running.port


def post(port: int, path: str, body: bytes,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    answer = response.read()
    conn.close()
    assert response.getheader("Content-Type", "").startswith("application/json"), answer
    return response.status, json.loads(answer)


def test_slow_clients_hold_no_worker(port: int) -> None:
    """20 connections trickling headers and 20 trickling bodies for 30 s: every normal
    request meanwhile is answered, 99% of them within a second."""
    body = json.dumps({"instances": [FLOWER]}).encode()
    with slow_clients.slow_clients(port, IRIS):
        outcome = slow_clients.normal_requests(port, IRIS, body, seconds=30, timeout=10)
    assert outcome.sent > 20
    assert outcome.answered == outcome.sent
    assert outcome.p99 < 1.0, sorted(outcome.latencies)[-5:]


def test_gzip_request_bodies_reach_the_app_untouched(port: int) -> None:
    """tritonclient compresses the body (Content-Encoding: gzip); the app decodes it."""
    client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
    data = np.array([FLOWER], dtype=np.float64)
    answers = []
    for compression in (None, "gzip", "deflate"):
        tensor = httpclient.InferInput("inputs", list(data.shape), "FP64")
        tensor.set_data_from_numpy(data, binary_data=True)
        result = client.infer("iris", [tensor], request_compression_algorithm=compression)
        answers.append(result.get_response()["outputs"])
    assert answers[0] and answers[1] == answers[0] and answers[2] == answers[0]


def test_keep_alive_to_clients(port: int) -> None:
    """Sync workers close every connection; the front keeps the client's open."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"instances": [FLOWER]})
    for _ in range(3):
        conn.request("POST", IRIS, body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["predictions"]
        assert not response.will_close
    conn.close()


def test_the_body_limit_is_the_apps(port: int) -> None:
    status, answer = post(port, IRIS, b" " * (LIMIT + 1))
    assert (status, answer) == (413, {"error": f"request body is over the limit of {LIMIT} bytes"})
    status, answer = post(port, "/grps/v1/infer/predict", b" " * (LIMIT + 1))
    assert status == 413 and answer["status"]["code"] == 413
    assert answer["status"]["status"] == "FAILURE"
    # Exactly the limit passes the front and reaches the app, which reads it.
    status, answer = post(port, IRIS, b" " * LIMIT)
    assert status == 400 and "empty" in answer["error"]
    # A gzip body is bounded as sent: small on the wire, the app bounds what it inflates to.
    packed = gzip.compress(b" " * (LIMIT * 10))
    status, answer = post(port, "/v2/models/iris/infer", packed, {"Content-Encoding": "gzip"})
    assert status in (400, 413) and "error" in answer


def test_a_malformed_request_gets_a_json_error(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"POST /v1/models/iris:predict HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n")
        answer = conn.recv(65536).decode()
    head, _, body = answer.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 400")
    assert json.loads(body) == {"error": "the request is malformed"}


@pytest.mark.parametrize("sent", [
    pytest.param(b"POST /v1/models/iris:predict HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", id="length-and-chunked"),
    pytest.param(b"POST /v1/models/iris:predict HTTP/1.1\r\nHost: a\r\n"
                 b"Transfer-Encoding: gzip\r\n\r\n", id="unsupported-transfer-coding"),
    pytest.param(b"TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", id="trace"),
    pytest.param(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", id="http-version"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x00b\r\n\r\n", id="nul-in-header"),
    pytest.param(b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", id="bad-method"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + b"a" * 40000 + b"\r\n\r\n",
                 id="header-too-long"),
    pytest.param(b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
                 id="request-line-too-long"),
    pytest.param(b"GET / HTTP/1.1\r\n\r\n", id="no-host"),
])
def test_what_nginx_refuses_itself_is_json(port: int, sent: bytes) -> None:
    """Its refusals before any worker sees the request, those whose request line it could
    not read included, in the protocols' JSON: never nginx's HTML page."""
    status, body = raw(port, sent)
    assert status >= 400 and "error" in body, body


def test_what_nginx_refuses_under_grps_is_grps_envelope(port: int) -> None:
    status, body = raw(port, b"POST /grps/v1/infer/predict HTTP/1.1\r\nHost: a\r\n"
                             b"Transfer-Encoding: gzip\r\n\r\n")
    assert status == 501
    assert body == {"status": {"code": 501, "msg": "the transfer encoding is not supported",
                               "status": "FAILURE"}}


def raw(port: int, sent: bytes) -> tuple[int, Any]:
    """The status and JSON body of the answer to *sent*, bytes as they are."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(sent)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.decode("latin-1").partition("\r\n\r\n")
    assert "content-type: application/json" in head.lower(), answer
    return int(head.split()[1]), json.loads(body)
