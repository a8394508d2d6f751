"""Payload records as CloudEvents over HTTP, as KServe's inference logger sends them.

Each record becomes one event for the request and one for the answer (as the policy's mode
keeps them), POSTed in the binary content mode: the body as the event's data, the event's
attributes in ``ce-`` headers. As KServe's logger: ``ce-specversion: 1.0``, ``ce-id`` the
request id (the same in both events), ``ce-type`` ``org.kubeflow.serving.inference.request``
or ``org.kubeflow.serving.inference.response``, ``ce-source``, ``ce-time``, and the
extension ``ce-inferenceservicename`` (the model) and ``ce-component`` (``predictor``).
Ours besides: ``ce-modelversion``, ``ce-protocol``, ``ce-verb``, ``ce-statuscode`` and
``ce-latencyms`` (on the answer), ``ce-traceid`` when the request was traced, and
``ce-truncated: true`` on a body cut at the size cap.

An answer other than 2xx, or none within ``PREDICT_PAYLOAD_LOG_TIMEOUT_SECONDS``, fails the
record (counted); the connection is kept open between events.
"""

from __future__ import annotations

import base64
import http.client
import socket
from typing import Any
from urllib.parse import urlsplit

import orjson

REQUEST_TYPE = "org.kubeflow.serving.inference.request"
RESPONSE_TYPE = "org.kubeflow.serving.inference.response"
CONTENT_TYPES = {"json": "application/json", "text": "text/plain; charset=utf-8",
                 "base64": "application/octet-stream"}


class CloudEventsSink:
    """POSTs each record's events to *url*."""

    def __init__(self, url: str, timeout: float, source: str | None) -> None:
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self.source = source or f"urn:flask-predict:{socket.gethostname()}"
        self.connection: http.client.HTTPConnection | None = None

    def write(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            for kind, side in ((REQUEST_TYPE, "request"), (RESPONSE_TYPE, "response")):
                if record[f"{side}_encoding"] is not None or record[f"{side}_truncated"]:
                    self._send(*event(record, kind, side, self.source))

    def _send(self, headers: dict[str, str], data: bytes) -> None:
        for attempt in (1, 2):  # once more on a fresh connection if the kept one was closed
            connection = self._connection()
            try:
                connection.request("POST", self.path, data, headers)
                answer = connection.getresponse()
                answer.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            except Exception:
                self.close()
                raise
            if answer.will_close:
                self.close()
            if not 200 <= answer.status < 300:
                raise OSError(f"the receiver answered {answer.status} {answer.reason}")
            return

    def _connection(self) -> http.client.HTTPConnection:
        if self.connection is None:
            kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self.connection = kind(self.host, self.port, timeout=self.timeout)
        return self.connection

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def event(record: dict[str, Any], kind: str, side: str, source: str
          ) -> tuple[dict[str, str], bytes]:
    """The headers and data of *record*'s event of type *kind*, for its *side*."""
    value, encoding = record[side], record[f"{side}_encoding"]
    if encoding == "json":
        data = orjson.dumps(value)
    elif encoding == "base64":
        data = base64.b64decode(value)
    else:
        data = (value or "").encode()
    headers = {
        "Content-Type": CONTENT_TYPES.get(encoding or "text", CONTENT_TYPES["text"]),
        "ce-specversion": "1.0", "ce-id": record["request_id"], "ce-type": kind,
        "ce-source": source, "ce-time": record["time"],
        "ce-inferenceservicename": record["model"] or "", "ce-component": "predictor",
        "ce-modelversion": record["version"] or "", "ce-protocol": record["protocol"],
        "ce-verb": record["verb"],
    }
    if kind == RESPONSE_TYPE:
        headers["ce-statuscode"] = str(record["status"])
        headers["ce-latencyms"] = str(record["latency_ms"])
    if record["trace_id"]:
        headers["ce-traceid"] = record["trace_id"]
    if record[f"{side}_truncated"]:
        headers["ce-truncated"] = "true"
    return headers, data
