"""Real object stores for the tests, started on 127.0.0.1 and reached through the real
clients with their endpoint settings: moto's S3-compatible server (``AWS_ENDPOINT_URL``) and
a Cloud Storage JSON API emulator (``STORAGE_EMULATOR_HOST``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.server import free_port

BIN = Path(sys.executable).parent

S3_ENV = {"AWS_ACCESS_KEY_ID": "AKIAFLASKPREDICTTEST", "AWS_DEFAULT_REGION": "us-east-1",
          "AWS_SECRET_ACCESS_KEY": "flask-predict-test-secret-do-not-log",
          "AWS_EC2_METADATA_DISABLED": "true"}
"""Credentials the S3 tests use (moto takes any unless told to check them); the tests look
for the secret in every log line. No client ever asks a cloud's metadata address."""


class StoreServer:
    """One storage server process; ``env`` points a client at it."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path,
                 extra_env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [part.format(port=self.port) for part in command]
        self.env = {key: value.format(url=self.url) for key, value in env.items()}
        self.cwd = cwd
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> StoreServer:
        self.cwd.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.extra_env, "STORAGE_BASE": str(self.cwd)}
        self.process = subprocess.Popen(self.command, cwd=self.cwd, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url, timeout=2).close()
                return self
            except urllib.error.HTTPError:
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.command[0]} did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def s3_server(cwd: Path, check_credentials: bool = False) -> StoreServer:
    """moto's S3 server; *check_credentials*: every request's key is checked (and, none
    being known, refused)."""
    extra = {"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if check_credentials else {}
    return StoreServer([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", "{port}"],
                       {"AWS_ENDPOINT_URL": "{url}", **S3_ENV}, cwd, extra)


def gcs_server(cwd: Path) -> StoreServer:
    """gcp-storage-emulator, keeping objects as files under *cwd* (``.cloudstorage``)."""
    return StoreServer([str(BIN / "gcp-storage-emulator"), "start", "-H", "127.0.0.1",
                        "--port", "{port}", "-q"], {"STORAGE_EMULATOR_HOST": "{url}", "NO_GCE_CHECK": "True"}, cwd)


class Bucket:
    """A bucket of one of the servers, written through its platform's client."""

    def __init__(self, server: StoreServer, scheme: str, name: str) -> None:
        self.server = server
        self.scheme = scheme
        self.name = name
        saved = {key: os.environ.get(key) for key in server.env}
        os.environ.update(server.env)
        try:
            if scheme == "s3":
                import boto3
                self._client: Any = boto3.client("s3")
                self._client.create_bucket(Bucket=name)
            else:
                from google.cloud import storage
                self._client = storage.Client()
                self._bucket = self._client.create_bucket(name)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def uri(self, prefix: str) -> str:
        return f"{self.scheme}://{self.name}/{prefix}"

    def put(self, key: str, data: bytes) -> None:
        if self.scheme == "s3":
            self._client.put_object(Bucket=self.name, Key=key, Body=data)
        else:
            self._bucket.blob(key).upload_from_string(data)

    def get(self, key: str) -> bytes | None:
        """The object's bytes; ``None`` when there is none."""
        if self.scheme == "s3":
            try:
                return bytes(self._client.get_object(Bucket=self.name, Key=key)["Body"].read())
            except self._client.exceptions.NoSuchKey:
                return None
        blob = self._bucket.blob(key)
        return bytes(blob.download_as_bytes()) if blob.exists() else None

    def delete(self, key: str) -> None:
        if self.scheme == "s3":
            self._client.delete_object(Bucket=self.name, Key=key)
        else:
            self._bucket.blob(key).delete()

    def upload(self, folder: Path, prefix: str) -> None:
        """Every file under *folder*, as ``prefix/<relative path>``, one by one."""
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self.put(f"{prefix}/{path.relative_to(folder).as_posix()}", path.read_bytes())


class Stall:
    """A TCP front for a store that can stop answering: while :meth:`stall`, it accepts every
    connection and never sends a byte (a hung endpoint, not a refused one); otherwise it
    passes bytes both ways to *target*'s port."""

    def __init__(self, target: StoreServer) -> None:
        import socket
        import threading
        self.target = target.port
        self.stalled = threading.Event()
        self.held: list[socket.socket] = []
        self._piped: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self) -> None:
        """Stop answering; the connections open now are cut (a client's pooled connection
        reconnects, and is held)."""
        self.stalled.set()
        piped, self._piped = self._piped, []
        for connection in piped:
            connection.close()

    def release(self) -> None:
        """Answer again: the connections held are closed (the client tries again)."""
        self.stalled.clear()
        held, self.held = self.held, []
        for connection in held:
            connection.close()

    def close(self) -> None:
        self._closed = True
        self.release()
        self._listener.close()

    def _accept(self) -> None:
        import socket
        import threading
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.stalled.is_set():
                self.held.append(client)
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._piped += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: Any, sink: Any) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.close()
            except OSError:
                pass
