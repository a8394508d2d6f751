"""The packaged sync worker under real gunicorn, one worker: a client that keeps its socket
open after its answer does not hold the worker, and a client still sending a body that was
refused unread gets its answer, not a reset."""

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
