"""gunicorn's sync worker, closing a connection as soon as its one request is answered, and
writing an answer given whole in one send.

Since gunicorn 26.2 the sync worker closes each connection in stages (RFC 9112, section
9.6): it half-closes, then waits up to 2 s for the client to close its side, draining what
arrives. That protects a client whose request body was not read (a 413 answered before an
upload ended): data arriving at a closed socket makes the kernel reset the connection, and
the reset may destroy the answer before the client reads it. The wait holds the worker,
idle, for a round trip of every request, and for the full 2 s when a client keeps its socket
open.

:class:`SyncWorker` keeps the staged close where it protects anyone: a request read to the
end of its declared ``Content-Length`` (every request the protocols answer, errors after
parsing included) ends with a half-close, a drain of what has already arrived, and a close.
A chunked or unread body, TLS, and any connection with data still arriving after the drain
take gunicorn's own close. A client that sends a second request on a connection the answer
closed (``Connection: close``) may see a reset instead of the first answer, as with the sync
workers of gunicorn before 26.2.

gunicorn's response sends its header block and then each body item, one ``sendall`` each:
two system calls and two TCP segments for an answer of one piece, the common case (a Flask
response of known length). :class:`OneWriteResponse` sends such an answer, headers and body,
in one ``sendall``: the same bytes, one segment fewer. Every other answer (streamed, chunked,
bodiless, of another length than declared) takes gunicorn's own path.

Two system calls a request less besides: an accepted connection is not marked close-on-exec
again (Python creates every socket so, PEP 446; gunicorn's ``close_on_exec`` makes two
``fcntl`` calls), and the heartbeat the master reads to find a stuck worker (a ``utime`` of
the worker's file, made before every accept) is made at most every :data:`HEARTBEAT_EVERY`
seconds, an eighth of the worker timeout at most: the master looks at it once a second and
kills only a worker silent for the whole timeout.

A request gunicorn's HTTP parser refuses (a bad request line, both ``Content-Length`` and
``Transfer-Encoding``, a header too long or too many, an unsupported transfer coding...)
never reaches the app: gunicorn answers it itself, with the status it chooses (400, 414,
417, 431, 501), and :class:`SyncWorker` makes that answer's body the JSON ``{"error": ...}``
every protocol's clients read, where gunicorn writes an HTML page.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any, Iterator

from gunicorn import util
from gunicorn.http.body import LengthReader
from gunicorn.http.wsgi import Response
from gunicorn.workers.sync import SyncWorker as GunicornSyncWorker

__all__ = ["OneWriteResponse", "SyncWorker", "close_read_connection", "read_whole",
           "write_json_error"]

#: what the drain reads at most before it leaves the connection to gunicorn's staged close
DRAIN_LIMIT = 65536
#: the longest time between two heartbeats (less when the worker timeout is under 8 s)
HEARTBEAT_EVERY = 1.0


class SyncWorker(GunicornSyncWorker):  # type: ignore[misc]
    """gunicorn's ``sync`` worker; a connection whose request was read whole is closed at
    once, and an answer given whole is written in one send
    (``worker_class = "flask_predict.process.sync_worker.SyncWorker"``)."""

    next_heartbeat = 0.0
    wsgi: Any
    app_callable: Any
    answering: Any

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.app_callable = self.wsgi
        self.answering = self.answer  # bound once, not on every request

    def notify(self) -> None:
        now = time.monotonic()
        if now >= self.next_heartbeat:
            # gunicorn passes its workers half the timeout: a quarter of that
            self.next_heartbeat = now + min(HEARTBEAT_EVERY, self.timeout / 4)
            super().notify()

    def accept(self, listener: Any) -> None:
        client, addr = listener.accept()  # close-on-exec already (PEP 446)
        client.setblocking(True)
        self.handle(listener, client, addr)

    def handle_request(self, listener: Any, req: Any, client: Any, addr: Any) -> None:
        # gunicorn calls ``self.wsgi`` with its response's ``start_response``: for this one
        # request that is :meth:`answer`, which gives the response one write; between
        # requests (the server's hooks) ``wsgi`` is the app itself
        self.wsgi = self.answering
        try:
            super().handle_request(listener, req, client, addr)
        finally:
            self.wsgi = self.app_callable
        if read_whole(req) and type(client) is socket.socket:
            close_read_connection(client)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's answer to a request it could not read or serve, with its status and
        words, in JSON (:func:`write_json_error`)."""
        with json_error_pages():
            super().handle_error(req, client, addr, exc)

    def answer(self, environ: dict[str, Any], start_response: Any) -> Any:
        """The app, called with gunicorn's own response turned into a
        :class:`OneWriteResponse`."""
        one_write(start_response)
        return self.app_callable(environ, start_response)


@contextlib.contextmanager
def json_error_pages() -> Iterator[None]:
    """gunicorn's error answers written by :func:`write_json_error` while the block runs
    (gunicorn's ``handle_error`` chooses the status and words, then calls
    ``gunicorn.util.write_error``, which writes an HTML page)."""
    html_page = util.write_error
    util.write_error = write_json_error
    try:
        yield
    finally:
        util.write_error = html_page


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """``gunicorn.util.write_error``'s answer (same status line, ``Connection: close``) with
    ``{"error": "<reason>: <message>"}`` as its body instead of an HTML page."""
    body = json.dumps({"error": f"{reason}: {mesg}" if mesg else reason}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin-1") + body)


def one_write(start_response: Any) -> None:
    """Make the gunicorn :class:`Response` whose ``start_response`` this is a
    :class:`OneWriteResponse` (anything else is left as it is)."""
    response = getattr(start_response, "__self__", None)
    if type(response) is Response:
        response.__class__ = OneWriteResponse


class OneWriteResponse(Response):  # type: ignore[misc]
    """gunicorn's HTTP/1 response; a body given in one piece of exactly its declared length
    goes out with the header block in one ``sendall``."""

    headers_sent: bool
    chunked: bool
    response_length: int | None
    sent: int
    sock: socket.socket

    def write(self, arg: bytes) -> None:
        if (not self.headers_sent and type(arg) is bytes
                and self.response_length == len(arg) and not self.chunked
                and getattr(self, "_omits_body", None) is False):
            head = header_block(self)
            self.headers_sent = True
            self.sent = len(arg)
            self.sock.sendall(head + arg)
            return
        super().write(arg)


def header_block(response: Response) -> bytes:
    """The status line and headers gunicorn's ``send_headers`` would send for *response*."""
    lines = response.default_headers()
    lines.extend(["%s: %s\r\n" % (name, value) for name, value in response.headers])
    return ("%s\r\n" % "".join(lines)).encode("latin-1")


def read_whole(req: Any) -> bool:
    """Whether gunicorn's request *req* declared a length and every byte of it has been taken
    off the connection (read by the app, or by gunicorn ahead of it)."""
    reader = getattr(getattr(req, "body", None), "reader", None)
    return type(reader) is LengthReader and getattr(reader, "length", None) == 0


def close_read_connection(client: socket.socket) -> bool:
    """Half-close *client*, drain what has arrived, close it; whether it was closed. Left
    open (for gunicorn's staged close) when more than :data:`DRAIN_LIMIT` bytes are waiting:
    the client is still sending."""
    try:
        client.shutdown(socket.SHUT_WR)
        drained = 0
        while drained <= DRAIN_LIMIT:
            data = client.recv(DRAIN_LIMIT, socket.MSG_DONTWAIT)
            if not data:  # the client has closed its side too
                break
            drained += len(data)
        else:
            return False
    except OSError:  # nothing waiting (EAGAIN), or the client is gone
        pass
    client.close()
    return True
