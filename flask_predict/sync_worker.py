"""gunicorn's sync worker, closing a connection as soon as its one request is answered.

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
"""

from __future__ import annotations

import socket
from typing import Any

from gunicorn.http.body import LengthReader
from gunicorn.workers.sync import SyncWorker as GunicornSyncWorker

__all__ = ["SyncWorker", "close_read_connection", "read_whole"]

#: what the drain reads at most before it leaves the connection to gunicorn's staged close
DRAIN_LIMIT = 65536


class SyncWorker(GunicornSyncWorker):  # type: ignore[misc]
    """gunicorn's ``sync`` worker; a connection whose request was read whole is closed at
    once (``worker_class = "flask_predict.sync_worker.SyncWorker"``)."""

    def handle_request(self, listener: Any, req: Any, client: Any, addr: Any) -> None:
        super().handle_request(listener, req, client, addr)
        if read_whole(req) and type(client) is socket.socket:
            close_read_connection(client)


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
