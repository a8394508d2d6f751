"""The queue wait read from ``X-Request-Start`` and the saturation series an embedded app
exposes: the wait, the workers' busy time, the requests in flight."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from flask.testing import FlaskClient

from flask_predict.observability.queue_time import queue_seconds
from tests.conftest import AppFactory
from tests.unit.web.test_observe import value

NOW = 1_700_000_000.250


@pytest.mark.parametrize("header", [
    "t=1700000000.000",          # nginx's ${msec}
    "t=1700000000000",           # milliseconds
    "1700000000000000",          # microseconds, no "t="
    "t=1700000000000000000",     # nanoseconds
])
def test_header_forms(header: str) -> None:
    assert queue_seconds(header, NOW) == pytest.approx(0.25, abs=1e-6)


@pytest.mark.parametrize("header", [None, "", "t=", "t=soon", "t=-5", "t=nan", "t=0"])
def test_unusable_headers_count_nothing(header: str | None) -> None:
    assert queue_seconds(header, NOW) is None


def test_a_front_clock_ahead_reads_as_no_wait() -> None:
    assert queue_seconds("t=1700000001.000", NOW) == 0.0


def test_app_exposes_queue_wait_and_busy_time(make_app: AppFactory,
                                              model_config: dict[str, Any]) -> None:
    client: FlaskClient = make_app({"iris": model_config["iris"]},
                                   metrics_path="/metrics").test_client()
    row = {"instances": [[5.1, 3.5, 1.4, 0.2]]}
    assert client.post("/v1/models/iris:predict", json=row).status_code == 200
    assert value(client, "flask_predict_request_queue_seconds_count") == 0  # no header
    # nginx's ${msec}: whole milliseconds, written down from an instant more than 2 s ago
    # (rounding half a millisecond up could not bring it under 2 s, however fast the request)
    waited_since_ms = math.floor(time.time() * 1000) - 2001
    answer = client.post("/v1/models/iris:predict", json=row,
                         headers={"X-Request-Start": f"t={waited_since_ms / 1000:.3f}"})
    assert answer.status_code == 200
    assert value(client, "flask_predict_request_queue_seconds_count") == 1
    assert value(client, "flask_predict_request_queue_seconds_sum") >= 2.0
    assert value(client, "flask_predict_request_queue_seconds_bucket", le="1.0") == 0
    assert value(client, "flask_predict_request_queue_seconds_bucket", le="+Inf") == 1
    assert value(client, "flask_predict_worker_busy_seconds_total") > 0
    assert value(client, "flask_predict_requests_in_flight") == 0
