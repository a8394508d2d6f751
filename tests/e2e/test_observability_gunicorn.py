"""Metrics and the access log under real gunicorn with 3 sync workers: the totals of every
protocol's requests whichever worker answers, and again after a worker is SIGKILLed and
respawned (its counts stay, its live gauges go)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.server import GunicornServer, request

pytestmark = pytest.mark.e2e

ROW = [5.1, 3.5, 1.4, 0.2]
REQUESTS = {  # protocol -> (path, body)
    "aiplatform": ("/v1/projects/p/models/iris:predict", {"instances": [ROW]}),
    "tfserving": ("/v1/models/iris:predict", {"instances": [ROW]}),
    "kserve_v2": ("/v2/models/iris/infer", {"inputs": [
        {"name": "inputs", "shape": [1, 4], "datatype": "FP64", "data": ROW}]}),
    "grps": ("/grps/v1/infer/predict", {"model": "iris", "ndarray": [ROW]}),
}
EACH = 12
Samples = list[tuple[str, dict[str, str], float]]


def scrape(server: GunicornServer) -> Samples:
    status, headers, data = request("GET", server.url + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    return [(s.name, s.labels, s.value)
            for family in text_string_to_metric_families(data.decode())
            for s in family.samples]


def total(found: Samples, name: str, **labels: str) -> float:
    return sum(v for n, got, v in found
               if n == name and all(got.get(k) == want for k, want in labels.items()))


def pids(found: Samples) -> set[str]:
    """The workers that report the versions they serve."""
    return {labels["pid"] for name, labels, value in found
            if name == "flask_predict_model_versions_loaded" and value == 1}


def eventually(check: Callable[[], Samples], seconds: float = 30.0) -> Samples:
    """Run *check* (which scrapes and asserts) until it passes: workers write their counts
    once a second."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.3)


def send(server: GunicornServer, protocol: str, request_id: str) -> None:
    path, body = REQUESTS[protocol]
    status, headers, data = request("POST", server.url + path, body=body,
                                    headers={"X-Request-ID": request_id})
    assert status == 200, data
    assert headers["X-Request-ID"] == request_id


def test_totals_across_workers_and_a_killed_worker(model_config: dict[str, Any],
                                                   tmp_path: Path) -> None:
    log = tmp_path / "log"
    with GunicornServer({"iris": model_config["iris"]}, workers=3, log_path=log) as server:
        # concurrent requests, so that every worker answers some
        jobs = [(protocol, f"{protocol}-{i}") for protocol in REQUESTS for i in range(EACH)]
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda job: send(server, *job), jobs))

        def counted() -> Samples:
            found = scrape(server)
            for protocol in REQUESTS:
                assert total(found, "flask_predict_requests_total", protocol=protocol,
                             model="iris", version="1", verb="predict", code="200") == EACH
            assert total(found, "request_predict_seconds_count", model_name="iris") \
                == EACH * len(REQUESTS)
            assert total(found, "flask_predict_workers") == 3
            assert len(pids(found)) == 3
            return found

        before = eventually(counted)
        assert total(before, "flask_predict_requests_in_flight") == 0
        assert total(before, "flask_predict_model_load_seconds_count", model="iris") == 3

        # each answered request left one access-log line naming its id; several workers
        lines = [line for line in log.read_text().splitlines() if "request_id=" in line]
        for protocol, request_id in jobs:
            line = next(line for line in lines if f"request_id={request_id} " in line)
            assert (f"protocol={protocol} verb=predict model=iris version=1 status=200"
                    in line)
        workers = set()
        for line in lines:
            match = re.search(r"\] \[(\d+)\] \[INFO\] request_id=", line)
            assert match, line
            workers.add(match[1])
        assert len(workers) >= 2

        # the grps monitor reads the same registry: every protocol's requests
        status, _, data = request("GET", server.url + "/grps/v1/monitor/metrics?format=json")
        values = json.loads(data)
        assert values["*request_count"] == EACH * len(REQUESTS) and values["workers"] == 3

        victim = sorted(pids(before))[0]
        os.kill(int(victim), signal.SIGKILL)

        def respawned() -> Samples:
            found = scrape(server)
            now = pids(found)
            assert victim not in now and len(now) == 3  # a new worker took its place
            assert total(found, "flask_predict_workers") == 3
            return found

        after = eventually(respawned, seconds=60)
        for protocol in REQUESTS:  # the dead worker's counts are still in the totals
            assert total(after, "flask_predict_requests_total", protocol=protocol,
                         verb="predict", code="200") == EACH
        assert total(after, "flask_predict_model_load_seconds_count", model="iris") == 4
        send(server, "kserve_v2", "after-respawn")

        def counted_once_more() -> Samples:
            found = scrape(server)
            assert total(found, "flask_predict_requests_total", protocol="kserve_v2",
                         verb="predict") == EACH + 1
            return found

        eventually(counted_once_more)
