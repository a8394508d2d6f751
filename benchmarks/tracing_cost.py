"""What tracing costs a request: instructions per one-row request with tracing off and on
(sampling 1.0, every span exported), in one run, as ratios.

Each route runs as in ``instructions.py`` (the app as ``wsgi.py`` builds it, called through
its WSGI callable, counted by ``perf`` or callgrind), first as it is, then with
``OTEL_TRACES_EXPORTER=otlp`` and the default sampler (``parentbased_always_on``: every
request without a caller's trace is sampled), exporting OTLP over HTTP to a receiver in this
process that reads and drops each batch. The export, on the batch processor's thread, is
counted with the request it belongs to.

    .venv/bin/python benchmarks/tracing_cost.py [--calls 2000] [--routes "AI Platform"]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import instructions  # noqa: E402
import models  # noqa: E402
from run import ROUTES  # noqa: E402


class _Drop(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that reads each export and answers 200."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--routes", nargs="*", default=list(ROUTES), choices=list(ROUTES))
    args = parser.parse_args()
    instructions.THREADS = "all"  # under callgrind: the batch processor's export counts too
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Drop)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    traced = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "bench",
              "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_port}"}
    with tempfile.TemporaryDirectory(prefix="flask-predict-tracing-") as tmp:
        models_dir = models.train(Path(tmp) / "models")
        print("| route | k instructions, tracing off | tracing on | on / off |")
        print("|---|---|---|---|")
        for route in args.routes:
            off = instructions.per_request(models_dir, route, "lr", 1, args.calls)
            os.environ.update(traced)
            try:
                on = instructions.per_request(models_dir, route, "lr", 1, args.calls)
            finally:
                for name in traced:
                    del os.environ[name]
            print(f"| {route} | {off / 1000:.1f} | {on / 1000:.1f} | {on / off:.2f}x |",
                  flush=True)
    receiver.shutdown()


if __name__ == "__main__":
    main()
