"""What tracing and the payload log read of a REST request: the :class:`~.transport.Transport`
the REST hooks (:mod:`.observe`) open each scope with. The carrier is the Flask request.

Span attributes follow OpenTelemetry's HTTP server conventions (``http.request.method``,
``http.route``, ``url.path``, ``http.response.status_code`` ...); the query string and the
headers other than the user agent are left out (they may carry secrets). A sampled
request's body is kept as it is read (:class:`~.payload_log.KeptStream` in place of the
WSGI input), the answer's body as it is sent.
"""

from __future__ import annotations

from typing import Any

from ..request.record import RequestRecord
from ..payload_log.kept import KeptBytes, KeptStream


class HttpTransport:
    """REST requests, read from the Flask request."""

    def header(self, carrier: Any, name: str) -> str | None:
        value: str | None = carrier.environ.get("HTTP_" + name.upper().replace("-", "_"))
        return value

    def span_start(self, carrier: Any, record: RequestRecord) -> tuple[str, dict[str, Any]]:
        environ = carrier.environ
        method = environ.get("REQUEST_METHOD", "")
        rule = carrier.url_rule
        route = rule.rule if rule is not None else ""
        attributes: dict[str, Any] = {
            "http.request.method": method, "url.path": environ.get("PATH_INFO", ""),
            "url.scheme": environ.get("wsgi.url_scheme", "http"),
            "client.address": environ.get("REMOTE_ADDR", ""),
            "http.request.body.size": record.request_bytes,
        }
        if route:
            attributes["http.route"] = route
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
        name, colon, port = host.rpartition(":")
        if not colon or not port.isdigit():  # no port in it ("[::1]" splits at "::")
            name, port = host, environ.get("SERVER_PORT", "")
        if name:
            attributes["server.address"] = name
        if port.isdigit():
            attributes["server.port"] = int(port)
        version = environ.get("SERVER_PROTOCOL", "").partition("/")[2]
        if version:
            attributes["network.protocol.version"] = version
        agent = environ.get("HTTP_USER_AGENT")
        if agent:
            attributes["user_agent.original"] = agent
        return f"{method} {route}" if route else method, attributes

    def span_end(self, carrier: Any, status: int, response_bytes: int | None
                 ) -> tuple[dict[str, Any], str | None]:
        attributes: dict[str, Any] = {"http.response.status_code": status}
        if response_bytes is not None:
            attributes["http.response.body.size"] = response_bytes
        return attributes, str(status) if status >= 500 else None

    def keep_request(self, carrier: Any, limit: int) -> KeptStream:
        environ = carrier.environ
        kept = KeptStream(environ["wsgi.input"], environ.get("HTTP_CONTENT_ENCODING"),
                          limit + 1)
        environ["wsgi.input"] = kept
        return kept

    def keep_response(self, response: Any) -> KeptBytes | None:
        if type(response) is list and len(response) == 1 and type(response[0]) is bytes:
            return KeptBytes(response[0])
        return None  # a streamed answer: not kept


HTTP = HttpTransport()
"""The one REST transport."""
