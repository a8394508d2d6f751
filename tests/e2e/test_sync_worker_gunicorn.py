"""The packaged sync worker under real gunicorn, one worker: a client that keeps its socket
open after its answer does not hold the worker, a client still sending a body that was
refused unread gets its answer, not a reset, and a request gunicorn's parser refuses gets
gunicorn's status with a JSON body, never its HTML page."""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests import models
from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

LIMIT = 1000
"""``FLASK_PREDICT_MAX_REQUEST_BYTES`` in these tests."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> GunicornServer:
    root = tmp_path_factory.mktemp("models")
    models.train_iris(root / "iris")
    env = {"FLASK_PREDICT_MAX_REQUEST_BYTES": str(LIMIT)}
    with GunicornServer({"iris": {"base_path": str(root / "iris")}}, workers=1, env=env,
                        log_path=root / "gunicorn.log") as running:
        yield running


def read_answer(sock: socket.socket) -> tuple[int, bytes]:
    """Status and body of the one answer on *sock* (the server closes after it)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_clients_that_keep_their_sockets_open_do_not_hold_the_worker(
        server: GunicornServer) -> None:
    """gunicorn's stock sync worker waits up to 2 s for each client to close first: five such
    clients one after another would keep the last one waiting 8 s."""
    started = time.monotonic()
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=30)
            for _ in range(5)]
    try:
        for sock in held:
            sock.sendall(b"GET /v2/models/iris/ready HTTP/1.1\r\nHost: x\r\n\r\n")
        answers = [read_answer(sock) for sock in held]  # read; never closed by the client
        elapsed = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
    assert [status for status, _ in answers] == [200] * 5
    assert elapsed < 5, f"the five answers took {elapsed:.1f}s: the worker waited on clients"


def test_a_client_still_sending_a_refused_body_reads_its_answer(server: GunicornServer) -> None:
    """The body is over the limit and never read: the worker answers 413 from the header
    alone and lingers for the client (gunicorn's staged close), so the rest of the body can
    still be sent. Closed at once, the server would answer it with a reset."""
    body = b"[" + b"0," * 20000 + b"0]"  # under the 64 KiB gunicorn drains before it closes
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/models/iris:predict HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body[:2000])
        for start, end in [(2000, 20000), (20000, len(body))]:
            time.sleep(0.3)  # answered meanwhile
            sock.sendall(body[start:end])
        status, answer = read_answer(sock)
    assert status == 413
    assert json.loads(answer) == {"error": f"request body of {len(body)} bytes is over the "
                                           f"limit of {LIMIT} bytes"}


def test_the_server_runs_the_packaged_worker(server: GunicornServer) -> None:
    assert "Using worker: flask_predict.process.sync_worker.SyncWorker" in server.log_text()


PREDICT = b"POST /v1/models/iris:predict HTTP/1.1\r\nHost: x\r\n"
JSON = b"Content-Type: application/json\r\n"


@pytest.mark.parametrize("sent, status", [
    pytest.param(PREDICT + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"0\r\n\r\n", 400, id="content-length-and-chunked"),
    pytest.param(PREDICT + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400,
                 id="two-content-lengths"),
    pytest.param(PREDICT + b"Content-Length: abc\r\n\r\n", 400, id="length-not-a-number"),
    pytest.param(PREDICT + b"Transfer-Encoding: gzip\r\n\r\n", 400,
                 id="unsupported-transfer-coding"),
    pytest.param(b"GARBAGE\r\n\r\n", 400, id="bad-request-line"),
    pytest.param(b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, id="bad-method"),
    pytest.param(b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 400, id="bad-http-version"),
    pytest.param(b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414,
                 id="request-line-too-long"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n", 431,
                 id="header-too-long"),
    pytest.param(b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(120))
                 + b"\r\n", 431, id="too-many-headers"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400,
                 id="bad-header-name"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400,
                 id="nul-in-header"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n", 400,
                 id="obsolete-folding"),
    pytest.param(PREDICT + b"Expect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417,
                 id="unknown-expectation"),
    # the body's chunks are read by the app: the protocol's own error, a 400
    pytest.param(PREDICT + JSON + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"
                 b"0\r\n\r\n", 400, id="bad-chunk-size"),
    pytest.param(b"POST /v2/models/iris/infer HTTP/1.1\r\nHost: x\r\n" + JSON +
                 b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n", 400,
                 id="bad-chunk-terminator"),
])
def test_a_request_the_parser_refuses_is_answered_in_json(
        server: GunicornServer, sent: bytes, status: int) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(sent)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, _, value in
               (line.partition(": ") for line in lines[1:])}
    assert int(lines[0].split()[1]) == status, data
    assert headers["content-type"] == "application/json", data
    assert int(headers["content-length"]) == len(body)
    assert b"<" not in body
    error = json.loads(body)["error"]
    assert isinstance(error, str) and error, body
