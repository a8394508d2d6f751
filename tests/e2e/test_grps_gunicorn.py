"""grps under real gunicorn with 3 sync workers: online/offline reach every worker, and a
stream arrives as separate HTTP chunks.

A streaming request keeps its sync worker busy until the test lets the stream finish, so
holding two streams open leaves exactly one worker to answer the next request: that is
how each check below knows which worker answers it.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from tests.e2e.server import GunicornServer, request
from tests.protocols.grps.models import make_grps_models

pytestmark = pytest.mark.e2e

OK = {"code": 200, "msg": "OK", "status": "SUCCESS"}


class Stream:
    """A raw-socket streaming predict call, read one HTTP chunk at a time."""

    def __init__(self, port: int, release: Path, count: int = 3) -> None:
        order = json.dumps({"count": count, "wait_for": str(release)})
        body = json.dumps({"model": "countdown", "str_data": order}).encode()
        self.release = release
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(b"POST /grps/v1/infer/predict?streaming=true HTTP/1.1\r\n"
                          b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.file: BinaryIO = self.sock.makefile("rb")
        status_line = self.file.readline()
        assert status_line.startswith(b"HTTP/1.1 200"), status_line
        self.headers = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            self.headers[name.strip().lower()] = value.strip()
        assert self.headers.get("transfer-encoding") == "chunked"
        assert self.headers.get("content-type") == "application/octet-stream"

    def chunk(self) -> bytes | None:
        """The next chunk's data; ``None`` at the end of the stream."""
        size = int(self.file.readline().split(b";")[0], 16)
        data = self.file.read(size)
        assert self.file.read(2) == b"\r\n"
        return data if size else None

    def finish(self) -> list[bytes]:
        """Let the stream go on, and read the rest of its chunks."""
        self.release.touch()
        chunks = []
        while (data := self.chunk()) is not None:
            chunks.append(data)
        self.file.close()
        self.sock.close()
        return chunks


def get(server: GunicornServer, path: str) -> tuple[int, Any]:
    status, _, data = request("GET", server.url + "/grps/v1" + path)
    return status, json.loads(data)


def held(server: GunicornServer, tmp_path: Path, name: str) -> Stream:
    """A stream that has sent its first message and now holds its worker."""
    stream = Stream(server.port, tmp_path / f"release-{name}")
    assert json.loads(stream.chunk() or b"") == {"status": OK, "str_data": "chunk-1"}
    return stream


def test_online_offline_in_every_worker_and_streaming_chunks(
        model_config: dict[str, Any], tmp_path: Path) -> None:
    models = {**model_config, **make_grps_models(tmp_path / "models")}
    env = {"FLASK_PREDICT_GRPS_DEFAULT_MODEL": "mirror"}
    with GunicornServer(models, workers=3, env=env, ready_path="/grps/v1/health/ready",
                        log_path=tmp_path / "log") as server:
        a = held(server, tmp_path, "a")
        b = held(server, tmp_path, "b")
        # the third worker, c, is the only one free
        assert get(server, "/health/offline") == (200, {"status": OK})
        assert get(server, "/health/ready")[0] == 503
        c = held(server, tmp_path, "c")

        # every chunk is one message: compact JSON and a newline
        assert a.finish() == [b'{"status":{"code":200,"msg":"OK","status":"SUCCESS"},'
                              b'"str_data":"chunk-%d"}\n' % i for i in (2, 3)]
        # a's worker is now the only free one, and never saw the offline call
        assert get(server, "/health/ready") == (503, {"status": {
            "code": 503, "msg": "Service Unavailable", "status": "FAILURE"}})
        # predict is still served while offline, as in grps
        status, _, data = request("POST", server.url + "/grps/v1/infer/predict",
                                  body={"str_data": "hi"})
        assert (status, json.loads(data)) == (200, {"status": OK, "str_data": "hi"})
        a = held(server, tmp_path, "a2")

        assert len(b.finish()) == 2
        assert get(server, "/health/ready")[0] == 503  # b's worker
        assert get(server, "/health/online") == (200, {"status": OK})  # b's worker
        b = held(server, tmp_path, "b2")

        assert len(c.finish()) == 2
        assert get(server, "/health/ready") == (200, {"status": OK})  # c's worker
        c = held(server, tmp_path, "c2")
        assert len(a.finish()) == 2
        assert get(server, "/health/ready") == (200, {"status": OK})  # a's worker

        for stream in (b, c):
            assert len(stream.finish()) == 2
        # metrics count the requests of all three workers, which write them once a second
        deadline = time.monotonic() + 30
        while True:
            status, metrics = get(server, "/monitor/metrics?format=json")
            assert status == 200
            if metrics["*request_count"] == 7 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert metrics["workers"] == 3
        assert metrics["*request_count"] == 7 and metrics["*fail_count"] == 0
        status, _, data = request("GET", server.url + "/grps/v1/monitor/metrics")
        assert status == 200 and b"*request_count</th><td>7<" in data
