"""flask_predict.process.sync_worker: which requests count as read whole (gunicorn's own parser), the
immediate close on real TCP sockets, an answer in one send (the same bytes as gunicorn's own
response), and the system calls a request no longer makes."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from gunicorn.config import Config
from gunicorn.http.parser import RequestParser

from flask_predict.process.sync_worker import DRAIN_LIMIT, close_read_connection, read_whole


def parsed(raw: bytes) -> object:
    return next(RequestParser(Config(), iter([raw]), ("127.0.0.1", 1)))


def test_a_request_is_read_whole_once_its_declared_body_is_off_the_connection() -> None:
    req = parsed(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n"
                 b"\r\n" + b"x" * 5000)
    assert not read_whole(req)
    assert req.body.read(10) == b"x" * 10  # type: ignore[attr-defined]
    assert not read_whole(req), "gunicorn reads 1 KiB ahead, not the whole body"
    assert len(req.body.read(5000)) == 4990  # type: ignore[attr-defined]
    assert read_whole(req)


@pytest.mark.parametrize("raw", [
    b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
])
def test_a_request_without_a_body_is_read_whole(raw: bytes) -> None:
    assert read_whole(parsed(raw))


def test_a_chunked_body_is_never_read_whole() -> None:
    req = parsed(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    assert req.body.read() == b"hello"  # type: ignore[attr-defined]
    assert not read_whole(req)
    assert not read_whole(object())


@pytest.fixture()
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A client and the server's side of one TCP connection over the loopback."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        # room for more than the drain limit in the server's receive buffer (the accepted
        # socket inherits the listener's size)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * DRAIN_LIMIT)
        client = socket.create_connection(listener.getsockname())
        served, _ = listener.accept()
    with client, served:
        client.settimeout(10)
        yield client, served


def test_an_answered_connection_closes_at_once_and_the_client_reads_to_the_end(
        connection: tuple[socket.socket, socket.socket]) -> None:
    client, served = connection
    client.sendall(b"request")
    assert served.recv(100) == b"request"
    served.sendall(b"answer")
    assert close_read_connection(served)
    assert served.fileno() == -1, "closed, not left to gunicorn's wait"
    assert client.recv(100) == b"answer"
    assert client.recv(100) == b"", "a clean end, no reset"


def test_bytes_already_arrived_are_drained_so_the_close_sends_no_reset(
        connection: tuple[socket.socket, socket.socket]) -> None:
    client, served = connection
    client.sendall(b"request" + b"x" * 1000)  # more than the server read
    assert served.recv(7) == b"request"
    served.sendall(b"answer")
    _wait_for_bytes(served, 1000)
    assert close_read_connection(served)
    assert client.recv(100) == b"answer"
    assert client.recv(100) == b""


def test_a_client_still_sending_is_left_to_the_staged_close(
        connection: tuple[socket.socket, socket.socket]) -> None:
    client, served = connection
    client.sendall(b"x" * (DRAIN_LIMIT + 4096))
    _wait_for_bytes(served, DRAIN_LIMIT + 4096)
    served.sendall(b"answer")
    assert not close_read_connection(served)
    assert served.fileno() != -1, "left open for gunicorn's close"
    with pytest.raises(OSError):
        served.send(b"more")  # its side was shut all the same
    served.close()


def _wait_for_bytes(sock: socket.socket, count: int) -> None:
    """Until at least *count* bytes wait unread in *sock*'s receive buffer."""
    deadline = time.monotonic() + 10
    while len(sock.recv(count, socket.MSG_PEEK)) < count:
        assert time.monotonic() < deadline, f"{count} bytes never arrived"
        time.sleep(0.01)


# --- one write per answer -------------------------------------------------------------------

class CountingSocket(socket.socket):
    """A real socket that counts its ``sendall`` calls."""

    sends = 0

    def sendall(self, data: bytes, flags: int = 0) -> None:  # type: ignore[override]
        type(self).sends += 1
        super().sendall(data, flags)


def answer_bytes(raw_request: bytes, status: str, headers: list[tuple[str, str]],
                 body: list[bytes], one_write_class: bool) -> tuple[bytes, int]:
    """What gunicorn's response (turned into a OneWriteResponse or not) puts on the wire for
    *body*, the Date header blanked, and how many sends it took."""
    from gunicorn.http import wsgi

    from flask_predict.process.sync_worker import one_write

    served, client = socket.socketpair()
    counting = CountingSocket(fileno=served.detach())
    CountingSocket.sends = 0
    with counting, client:
        req = parsed(raw_request)
        response, _ = wsgi.create(req, counting, ("127.0.0.1", 1), ("127.0.0.1", 2), Config())
        response.force_close()
        if one_write_class:
            one_write(response.start_response)
        response.start_response(status, headers)
        for item in body:
            response.write(item)
        response.close()
        counting.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := client.recv(65536):
            data += chunk
    lines = [b"Date: -" if line.startswith(b"Date: ") else line
             for line in data.split(b"\r\n")]
    return b"\r\n".join(lines), CountingSocket.sends


POST = b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


@pytest.mark.parametrize("request_, status, headers, body, sends", [
    (POST, "200 OK", [("Content-Type", "application/json"), ("Content-Length", "7")],
     [b'{"a":1}'], 1),
    (POST, "400 BAD REQUEST", [("Content-Length", "2")], [b"{}"], 1),
    # gunicorn's own path: chunked (no length), a length that differs, a body in pieces,
    # no body
    (POST, "200 OK", [("Content-Type", "text/plain")], [b"streamed"], 3),
    (POST, "200 OK", [("Content-Length", "3")], [b"abcdef"], 2),
    (POST, "200 OK", [("Content-Length", "6")], [b"abc", b"def"], 3),
    (POST, "204 NO CONTENT", [], [b""], 1),
    (b"HEAD /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n", "200 OK", [("Content-Length", "2")],
     [b"{}"], 1),
])
def test_an_answer_of_one_piece_goes_out_in_one_send_with_the_same_bytes(
        request_: bytes, status: str, headers: list[tuple[str, str]], body: list[bytes],
        sends: int) -> None:
    ours, our_sends = answer_bytes(request_, status, headers, body, one_write_class=True)
    theirs, _ = answer_bytes(request_, status, headers, body, one_write_class=False)
    assert ours == theirs
    assert our_sends == sends


def test_only_gunicorns_own_response_class_is_changed() -> None:
    from gunicorn.http import wsgi

    from flask_predict.process.sync_worker import OneWriteResponse, one_write

    class Other(wsgi.Response):  # type: ignore[misc]
        pass

    other = Other(parsed(POST), None, Config())
    one_write(other.start_response)
    one_write(print)
    assert type(other) is Other
    plain = wsgi.Response(parsed(POST), None, Config())
    one_write(plain.start_response)
    assert type(plain) is OneWriteResponse


# --- system calls a request ----------------------------------------------------------------

def test_accepted_connections_are_already_close_on_exec() -> None:
    """What lets the worker skip gunicorn's own close_on_exec (two fcntl calls a request)."""
    import os

    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)
        with socket.create_connection(listener.getsockname()):
            served, _ = listener.accept()
            with served:
                assert not os.get_inheritable(served.fileno())


def test_the_heartbeat_is_made_at_most_every_so_often() -> None:
    from gunicorn.workers.workertmp import WorkerTmp

    from flask_predict.process.sync_worker import HEARTBEAT_EVERY, SyncWorker

    config = Config()
    worker = SyncWorker.__new__(SyncWorker)  # only what notify() reads: no process started
    worker.tmp = WorkerTmp(config)
    worker.timeout = 30.0  # gunicorn passes half its timeout of 60 s
    try:
        worker.notify()
        first = worker.tmp.last_update()
        time.sleep(0.01)
        worker.notify()
        assert worker.tmp.last_update() == first, "too soon: not made again"
        worker.next_heartbeat = time.monotonic() - 0.001
        before = time.monotonic()
        worker.notify()
        assert worker.tmp.last_update() > first
        # the same sum on both sides: float rounding keeps the order of the clock's readings
        assert before + HEARTBEAT_EVERY <= worker.next_heartbeat <= (
            time.monotonic() + HEARTBEAT_EVERY)
        worker.timeout = 2.0  # gunicorn's timeout of 4 s: every 0.5 s
        worker.next_heartbeat = 0.0
        before = time.monotonic()
        worker.notify()
        assert before + 0.5 <= worker.next_heartbeat <= time.monotonic() + 0.5
    finally:
        worker.tmp.close()
